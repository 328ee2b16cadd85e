// CORS for browser applications calling the OpenAI-compatible API under /v1, for the origins
// in server.cors_origins only (none by default). No credentials: browsers send the key in
// Authorization, never cookies, so the console's session cannot ride along. The console
// (/console, /api/console) stays same-origin: it gets no CORS headers at all.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** What browser code may read from an answer besides the CORS-safelisted headers. */
const EXPOSED = [
  "x-request-id",
  // the request id as Anthropic's SDKs read it (the Messages API)
  "request-id",
  "x-ratelimit-limit-requests",
  "x-ratelimit-limit-tokens",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-remaining-tokens",
  "x-ratelimit-reset-requests",
  "x-ratelimit-reset-tokens",
  "retry-after",
  "retry-after-ms",
  "x-content-safety",
  "x-content-safety-stream",
  "x-gateway-cost-usd",
].join(", ");

/** How long a browser may reuse a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE = 600;

/** A comma-separated list of header names, as Access-Control-Request-Headers carries it. */
const HEADER_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*,\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;

const isApi = (request: FastifyRequest) => request.url.startsWith("/v1/");

export function registerCors(app: FastifyInstance, origins: readonly string[]): void {
  if (!origins.length) return;
  const allowed = new Set(origins);
  /** the request's Origin when it is allowed on this route, else undefined */
  const allowedOrigin = (request: FastifyRequest, reply: FastifyReply): string | undefined => {
    if (!isApi(request)) return undefined;
    // the answer depends on the Origin: caches must keep one per origin
    reply.header("vary", "Origin");
    const origin = request.headers.origin;
    return typeof origin === "string" && allowed.has(origin) ? origin : undefined;
  };

  // set before anything else answers, so refusals (401, 429) are readable by the page too
  app.addHook("onRequest", async (request, reply) => {
    const origin = allowedOrigin(request, reply);
    if (origin && request.method !== "OPTIONS")
      reply.header("access-control-allow-origin", origin).header("access-control-expose-headers", EXPOSED);
  });

  app.options("/v1/*", async (request, reply) => {
    const origin = allowedOrigin(request, reply);
    if (origin) {
      const asked = request.headers["access-control-request-headers"];
      reply
        .header("access-control-allow-origin", origin)
        .header("access-control-allow-methods", "GET, POST")
        // the SDKs send headers of their own (x-stainless-*): allow what was asked for
        .header(
          "access-control-allow-headers",
          typeof asked === "string" && HEADER_LIST.test(asked.trim())
            ? asked.trim()
            : "authorization, content-type",
        )
        .header("access-control-max-age", String(PREFLIGHT_MAX_AGE));
    }
    return reply.code(204).send();
  });
}
