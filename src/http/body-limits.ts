// How large a request body may be, per route. Coding agents (Claude Code on /v1/messages,
// Codex on /v1/responses, Gemini CLI on /v1beta/models/…) send the whole conversation with
// every turn, so a long session passes the general `server.body_limit_bytes` (1 MiB) long
// before it passes Anthropic's own request limit (32 MB); their routes take
// `server.agent_body_limit_bytes` instead. Both are enforced by Fastify while the body streams
// in: a `content-length` over the limit is refused before a byte is read, a chunked body as
// soon as it passes the limit, and nothing beyond the limit is ever buffered.
import type { FastifyRequest } from "fastify";
import type { Config } from "../config/schema.ts";
import { GatewayError } from "../errors/index.ts";

/** The routes of the agent APIs, which take `server.agent_body_limit_bytes`. */
export const AGENT_BODY_ROUTES: ReadonlySet<string> = new Set([
  "/v1/messages",
  "/v1/messages/count_tokens",
  "/v1/responses",
  "/v1beta/models/*",
  "/v1/models/*",
]);

/** The route options that give an agent API's route its own body limit. */
export function agentBody(server: Config["server"]): { bodyLimit: number } {
  return { bodyLimit: server.agent_body_limit_bytes };
}

/** A size in the unit a person reads it in: "32 MiB", "64 KiB", "1000 bytes". */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of [
    ["GiB", 1024 ** 3],
    ["MiB", 1024 ** 2],
    ["KiB", 1024],
  ] as const)
    if (bytes >= size && bytes % (size / 16) === 0) return `${bytes / size} ${unit}`;
  return `${bytes} bytes`;
}

/**
 * The 413 of a body over its route's limit, naming the limit and the setting that raises it,
 * so the person who reads it (a Claude Code user, an operator reading a log) knows what to
 * change: the client cannot send less of a conversation it needs.
 */
export function bodyTooLarge(request: FastifyRequest, server: Config["server"]): GatewayError {
  const url = request.routeOptions.url;
  const agent = url !== undefined && AGENT_BODY_ROUTES.has(url);
  const setting = agent ? "server.agent_body_limit_bytes" : "server.body_limit_bytes";
  const limit = agent ? server.agent_body_limit_bytes : server.body_limit_bytes;
  return new GatewayError("request_too_large", {
    message:
      `The request body is larger than this gateway accepts${url ? ` on ${url}` : ""}: ` +
      `${formatBytes(limit)} (${limit} bytes). The gateway's operator can raise it with the setting ${setting}.`,
  });
}
