// The OpenAI-compatible API under /v1. Every route here is authenticated by key.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { parseChatRequest } from "../../../apis/chat-completions/request.ts";
import { GatewayError } from "../../../errors/index.ts";
import { rateHeaders, rateSubjects } from "../../../ledger/rate-limiter.ts";
import { CallDraft } from "../../../records/draft.ts";
import { CLIENT_GONE } from "../../../records/outcomes.ts";
import { ClientGone } from "../../../relay/call.ts";
import { admitRequest } from "../../../relay/hold.ts";
import { authHook } from "../../auth-hook.ts";
import type { GatewayDeps } from "../../deps.ts";
import { sseSink } from "../../sse.ts";

const CHAT_ROUTE = "/v1/chat/completions";

export async function v1Routes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const authenticate = authHook(deps);
  const recordGone = (draft: CallDraft) =>
    deps.finisher
      .finish(draft, CLIENT_GONE)
      .catch((err) => deps.logger.error({ err }, "could not record a call the client left"));

  app.addHook("onRequest", async (request, reply) => {
    const draft = request.routeOptions.url === CHAT_ROUTE ? new CallDraft(request.id) : null;
    if (!draft) {
      await authenticate(request);
      return setRateHeaders(request, reply);
    }
    // Chat calls get a record, rejected ones too. A client that leaves before the handler
    // runs (during the key lookup, or while its body is read) would otherwise leave none:
    // Fastify waits for the rest of a body that never comes, and no handler runs.
    request.call = draft;
    // Every chat answer says how many upstream attempts it took; routing sets the real count.
    reply.header("x-gateway-attempts", "0");
    let authenticating = true;
    let goneWhileAuthenticating = false;
    reply.raw.once("close", () => {
      if (reply.raw.writableFinished || draft.written || draft.relayed) return;
      if (authenticating)
        goneWhileAuthenticating = true; // record once the key is known
      else void recordGone(draft);
    });
    try {
      await authenticate(request);
    } finally {
      authenticating = false;
    }
    if (goneWhileAuthenticating && !draft.written) {
      await recordGone(draft);
      throw new GatewayError("invalid_request", { message: "The client closed the connection." });
    }
    await setRateHeaders(request, reply);
  });

  async function setRateHeaders(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Every authenticated /v1 answer carries the rate-limit windows as they stand; a chat
    // call replaces them with the windows after its own admission. Shared buckets that cannot
    // be read leave the headers out: listing models consumes nothing, and a chat call fails
    // closed at its own admission.
    const { key, account } = request.auth!;
    const subjects = rateSubjects(key, account.id, deps.registry.plan(account.plan_id));
    try {
      reply.headers(rateHeaders(await deps.rates.peek(subjects)));
    } catch {}
  }

  app.get("/v1/models", async (request, reply) => {
    return reply.type("application/json").send(deps.registry.modelListJson(request.auth!.account.plan_id));
  });

  // Model ids may contain "/" (meta-llama/…): the SDKs send it encoded or not, so the rest of
  // the path is the id.
  app.get("/v1/models/*", async (request, reply) => {
    const id = (request.params as { "*": string })["*"];
    const json = deps.registry.modelJson(request.auth!.account.plan_id, id);
    if (json === undefined)
      throw new GatewayError("model_not_found", {
        message: `The model '${id.slice(0, 128)}' does not exist or your plan does not include it.`,
        param: "model",
      });
    return reply.type("application/json").send(json);
  });

  app.post(CHAT_ROUTE, async (request, reply) => {
    request.call!.relayed = true;
    const auth = request.auth!;
    const setHeaders = (headers: Record<string, string>) => reply.headers(headers);
    // The request counts against the rate limits before anything else is done with it.
    const rateTicket = await admitRequest(
      deps.rates,
      auth,
      deps.registry.plan(auth.account.plan_id),
      setHeaders,
    );
    const body = parseChatRequest(request.body);
    const client = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) client.abort(new ClientGone("the client closed the connection"));
    };
    reply.raw.once("close", onClose);
    try {
      const json = await deps.relay.run(
        { auth, draft: request.call!, clientSignal: client.signal, setHeaders, rateTicket },
        body,
        sseSink(reply, { stalledMs: deps.config.server.stream_stall_ms }),
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
