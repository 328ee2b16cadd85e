// The body of POST /v1/chat/completions beyond the canonical request (src/domain/chat-request.ts):
// the top-level fields the gateway does not read, which the pass-through policy weighs.
import { chatRequestSchema } from "../../domain/chat-request.ts";
import type { Untranslated } from "../../providers/passthrough.ts";

const KNOWN_FIELDS: ReadonlySet<string> = new Set([...Object.keys(chatRequestSchema.shape), "stream"]);

/** The body's top-level fields the gateway does not read, as untranslated constructs (src/providers/passthrough.ts). */
export function unknownFields(body: Record<string, unknown>): Untranslated[] {
  let out = NO_FIELDS;
  for (const field in body)
    if (!KNOWN_FIELDS.has(field) && body[field] !== undefined && body[field] !== null) {
      if (out === NO_FIELDS) out = [];
      out.push({ param: field, name: field });
    }
  return out;
}

const NO_FIELDS: Untranslated[] = [];
