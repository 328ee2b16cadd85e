// The OpenAI-compatible API under /v1. Every route here is authenticated by key.
import type { FastifyInstance } from "fastify";
import { rateHeaders, rateSubjects } from "../../../ledger/rate-limiter.ts";
import { CallDraft } from "../../../records/draft.ts";
import { ClientGone } from "../../../relay/chat-relay.ts";
import { parseChatRequest } from "../../../relay/request-schema.ts";
import { authHook } from "../../auth-hook.ts";
import type { GatewayDeps } from "../../deps.ts";
import { sseSink } from "../../sse.ts";

export const CHAT_ROUTE = "/v1/chat/completions";

export async function v1Routes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const authenticate = authHook(deps);
  app.addHook("onRequest", async (request, reply) => {
    // Chat calls get a record, rejected ones too; the draft is filled in as the call goes.
    if (request.routeOptions.url === CHAT_ROUTE) request.call = new CallDraft(request.id);
    await authenticate(request);
    // Every authenticated /v1 answer carries the rate-limit windows as they stand; a chat
    // call replaces them with the windows after its own admission.
    const { key, account } = request.auth!;
    reply.headers(
      rateHeaders(deps.rates.peek(rateSubjects(key, account.id, deps.registry.plan(account.plan_id)))),
    );
  });

  app.get("/v1/models", async (request, reply) => {
    return reply.type("application/json").send(deps.registry.modelListJson(request.auth!.account.plan_id));
  });

  app.post(CHAT_ROUTE, async (request, reply) => {
    const body = parseChatRequest(request.body);
    const client = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) client.abort(new ClientGone("the client closed the connection"));
    };
    reply.raw.once("close", onClose);
    try {
      const json = await deps.relay.run(
        {
          auth: request.auth!,
          draft: request.call!,
          clientSignal: client.signal,
          setHeaders: (headers) => reply.headers(headers),
        },
        body,
        sseSink(reply),
      );
      if (json !== undefined) return reply.type("application/json").send(json);
      // The relay answered (stream) or there is nobody left to answer.
      if (!reply.sent) reply.hijack();
      if (!reply.raw.writableEnded && client.signal.aborted) reply.raw.destroy();
      return reply;
    } finally {
      reply.raw.off("close", onClose);
    }
  });
}
