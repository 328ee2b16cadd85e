// Which client API a route serves (its route config `api`): where its key travels and the
// envelope its errors are answered in. Routes of no API of their own (the model list, the
// console, unknown routes) answer as chat completions do, in OpenAI's envelope.
import type { FastifyRequest } from "fastify";
import { chatCompletions } from "../apis/chat-completions/api.ts";
import type { ClientApi } from "../apis/types.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** the client API a route serves */
    api?: ClientApi;
    /** the route runs a call: it is recorded from its first moment, refused calls too */
    records?: boolean;
  }
}

export function routeApi(request: FastifyRequest): ClientApi {
  return request.routeOptions.config?.api ?? chatCompletions;
}
