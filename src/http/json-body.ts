// The only body parser: application/json, strictly UTF-8. Node would silently turn invalid
// bytes into U+FFFD and forward a prompt the client never wrote; we refuse it instead.
import { isUtf8 } from "node:buffer";
import type { FastifyInstance } from "fastify";
import { GatewayError } from "../errors/index.ts";

/**
 * Deeper JSON than this is refused: nothing a chat request needs comes close, and very deep
 * values would exhaust the stack wherever they are serialised again (forwarding, counting).
 */
const MAX_JSON_DEPTH = 128;

/** The deepest nesting of arrays and objects in a JSON text, outside strings; linear, no recursion. */
function jsonDepth(bytes: Uint8Array): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (inString) {
      if (b === 0x5c)
        i++; // backslash: skip the escaped character
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) {
      if (++depth > max) max = depth;
    } else if (b === 0x7d || b === 0x5d) depth--;
  }
  return max;
}

export function registerJsonBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0)
      return done(new GatewayError("invalid_json", { message: "The request body is empty." }), undefined);
    if (!isUtf8(bytes))
      return done(
        new GatewayError("invalid_json", { message: "The request body is not valid UTF-8." }),
        undefined,
      );
    if (jsonDepth(bytes) > MAX_JSON_DEPTH)
      return done(
        new GatewayError("invalid_json", {
          message: `The request body is nested more than ${MAX_JSON_DEPTH} levels deep.`,
        }),
        undefined,
      );
    try {
      done(null, JSON.parse(bytes.toString("utf8")));
    } catch (err) {
      done(
        new GatewayError("invalid_json", {
          message: `The request body is not valid JSON: ${(err as Error).message}`,
        }),
        undefined,
      );
    }
  });
}
