// Which client API a route serves (its route config `api`): where its key travels and the
// envelope its errors are answered in. Routes of no API of their own (the model list, the
// console) answer as chat completions do, in OpenAI's envelope; an unknown route under an
// API's path answers in that API's (pathApi).
import type { FastifyRequest } from "fastify";
import { chatCompletions } from "../apis/chat-completions/api.ts";
import { gemini } from "../apis/gemini/api.ts";
import { messages } from "../apis/messages/api.ts";
import type { ClientEdge } from "../apis/types.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * the client API a route serves; a function where its clients say which (`GET /v1/models`:
     * OpenAI's, or Google's by where the key is)
     */
    api?: ClientEdge | ((request: FastifyRequest) => ClientEdge);
    /**
     * the route runs a call: it is recorded from its first moment, refused calls too; a
     * function where the path decides (Gemini's `models/{model}:{method}`: generate, not count)
     */
    records?: boolean | ((request: FastifyRequest) => boolean);
    /**
     * A read (the model list, a stored response): it takes a request from the key's and the
     * account's rate limits, as a call does, without a record.
     */
    reads?: boolean;
  }
}

export function routeApi(request: FastifyRequest): ClientEdge {
  const api = request.routeOptions.config?.api;
  return typeof api === "function" ? api(request) : (api ?? chatCompletions);
}

/** Whether a route's request runs a call, recorded from its first moment. */
export function recordsCall(request: FastifyRequest): boolean {
  const records = request.routeOptions.config?.records;
  return typeof records === "function" ? records(request) : records === true;
}

/**
 * The API whose paths a URL is under, for requests no route matched: `PUT /v1/messages` or
 * `POST /v1/messages/batches` come from Anthropic's SDK, which reads an error only from
 * Anthropic's envelope, and anything under `/v1beta/` from Google's, which reads Google's.
 * The Responses API's envelope is OpenAI's, as for any other path.
 */
export function pathApi(url: string): ClientEdge {
  const path = url.split("?")[0]!;
  if (path.startsWith("/v1beta/")) return gemini;
  return path === "/v1/messages" || path.startsWith("/v1/messages/") ? messages : chatCompletions;
}
