// OpenAI's chat completions wire format as upstreams send it, read leniently: what the relay
// needs is checked, everything else passes through untouched.
import { z } from "zod";
import type { FinishReason, Usage } from "../../domain/completion.ts";

const count = z.number().int().nonnegative();

/** OpenAI's usage object; a figure that is missing or not a count makes the whole usage absent. */
const usageSchema = z.looseObject({
  prompt_tokens: count,
  completion_tokens: count,
  prompt_tokens_details: z.looseObject({ cached_tokens: count.nullish() }).nullish().catch(undefined),
  completion_tokens_details: z.looseObject({ reasoning_tokens: count.nullish() }).nullish().catch(undefined),
});

const FINISH_REASONS: ReadonlySet<string> = new Set<FinishReason>([
  "stop",
  "length",
  "tool_calls",
  "content_filter",
  "function_call",
]);

/** A whole completion as read: every choice with its index, a finish reason as above, a message with a role. */
export interface CompletionShape {
  [field: string]: unknown;
  choices: Array<{
    [field: string]: unknown;
    index: number;
    finish_reason: FinishReason | null;
    message: { [field: string]: unknown; role: string };
  }>;
  usage?: unknown;
}

/** A stream chunk as read: every choice with its index, a finish reason as above, a delta object. */
export interface ChunkShape {
  [field: string]: unknown;
  choices: Array<{
    [field: string]: unknown;
    index: number;
    finish_reason: FinishReason | null;
    delta: object;
  }>;
  usage?: unknown;
}

/** A JSON object (not null, not an array): what every field of an upstream's reply is read from. */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A choice's index and finish reason checked, the reason normalised in place: OpenAI's own
 * finish reasons pass; another server's word for "it ended" reads as stop. An empty string is
 * "not finished" (Ollama and SGLang send it on every chunk before the last). False when the
 * choice is not one.
 */
function readChoice(c: unknown): c is Record<string, unknown> {
  if (!isObject(c) || !Number.isInteger(c.index) || (c.index as number) < 0) return false;
  const r = c.finish_reason;
  if (r != null && typeof r !== "string") return false;
  c.finish_reason = !r ? null : FINISH_REASONS.has(r) ? r : "stop";
  return true;
}

/**
 * A stream chunk checked by hand rather than by a schema: a stream has dozens of chunks, and
 * zod's copy of each was most of what reading one cost. Normalizes the parsed object in place
 * (it is the caller's, fresh from JSON.parse); undefined when it is not a chunk.
 */
export function readChunk(raw: unknown): ChunkShape | undefined {
  if (!isObject(raw) || !Array.isArray(raw.choices)) return undefined;
  for (const c of raw.choices as unknown[]) {
    if (!readChoice(c)) return undefined;
    if (!isObject(c.delta)) c.delta = {};
  }
  return raw as ChunkShape;
}

/** A whole completion, checked in place as readChunk checks a chunk; a message without a role is the assistant's. */
export function readCompletion(raw: unknown): CompletionShape | undefined {
  if (!isObject(raw) || !Array.isArray(raw.choices)) return undefined;
  for (const c of raw.choices as unknown[]) {
    if (!readChoice(c) || !isObject(c.message)) return undefined;
    if (typeof c.message.role !== "string") c.message.role = "assistant";
  }
  return raw as CompletionShape;
}

/** An error object, in a 4xx/5xx body or inside a 200 stream. */
export const errorSchema = z.looseObject({
  error: z
    .looseObject({
      message: z.string().optional().catch(undefined),
      code: z.union([z.string(), z.number()]).nullish().catch(undefined),
      param: z.string().nullish().catch(undefined),
      type: z.string().nullish().catch(undefined),
    })
    .or(z.string().transform((message) => ({ message }))),
});

/** The upstream's usage in our figures; undefined when it sent none or not a valid one. */
export function readUsage(raw: unknown): Usage | undefined {
  if (raw == null) return undefined;
  const parsed = usageSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const { prompt_tokens, completion_tokens, total_tokens: _total, ...details } = parsed.data;
  return {
    prompt: prompt_tokens,
    completion: completion_tokens,
    cachedInput: parsed.data.prompt_tokens_details?.cached_tokens ?? 0,
    cacheWrite: 0,
    reasoning: parsed.data.completion_tokens_details?.reasoning_tokens ?? 0,
    details,
  };
}
