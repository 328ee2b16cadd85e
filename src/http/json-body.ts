// The only body parser: application/json, strictly UTF-8. Node would silently turn invalid
// bytes into U+FFFD and forward a prompt the client never wrote; we refuse it instead.
import { isUtf8 } from "node:buffer";
import type { FastifyInstance } from "fastify";
import { GatewayError } from "../errors/index.ts";

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
