// The client APIs under /v1. Every route here is authenticated by key, in the way its client
// API sends it (route config `api`; chat completions' when none is set); the routes that run
// a call (route config `records`) get a call record from their first moment.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { chatCompletions } from "../../../apis/chat-completions/api.ts";
import { embeddings } from "../../../apis/embeddings/api.ts";
import { messages } from "../../../apis/messages/api.ts";
import { countTokens } from "../../../apis/messages/count-tokens.ts";
import { responsesApi } from "../../../apis/responses/api.ts";
import { ResponseStore } from "../../../apis/responses/stored.ts";
import { sessionOf } from "../../../apis/session.ts";
import { CLIENT_GONE } from "../../../domain/outcomes.ts";
import { GatewayError } from "../../../errors/index.ts";
import { wrongModelKind } from "../../../models/registry.ts";
import { rateHeaders, rateSubjects } from "../../../rate-limits/rate-limiter.ts";
import { CallDraft } from "../../../records/draft.ts";
import { admitRequest } from "../../../relay/hold.ts";
import { estimator } from "../../../tokens/estimator.ts";
import { authHook } from "../../auth-hook.ts";
import { agentBody } from "../../body-limits.ts";
import type { GatewayDeps } from "../../deps.ts";
import { recordsCall, routeApi } from "../../route-api.ts";
import { untilClientLeaves } from "./client-signal.ts";
import { geminiModels, geminiRoutes, isGemini, openaiOrGoogle } from "./gemini.ts";
import { callRoute, embeddingsRoute, relayRoute } from "./relay-route.ts";

export async function v1Routes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const authenticate = authHook(deps);
  const recordGone = (draft: CallDraft) =>
    deps.finisher
      .finish(draft, CLIENT_GONE)
      .catch((err) => deps.logger.error({ err }, "could not record a call the client left"));

  app.addHook("onRequest", async (request, reply) => {
    const api = routeApi(request);
    if (api.requestIdHeader) reply.header(api.requestIdHeader, request.id);
    const draft = recordsCall(request) ? new CallDraft(request.id, api.name) : null;
    if (!draft) {
      await authenticate(request, api);
      // A read costs the gateway a request (and the store a query): it counts against the
      // rate limits as a call does (second audit: 12 of 12 reads served on a key limited to 5).
      if (request.routeOptions.config?.reads) return void (await admitRead(request, reply));
      return setRateHeaders(request, reply);
    }
    // Calls get a record, rejected ones too. A client that leaves before the handler
    // runs (during the key lookup, or while its body is read) would otherwise leave none:
    // Fastify waits for the rest of a body that never comes, and no handler runs.
    request.call = draft;
    // the headers' session, for a call refused before its body is read (the route reads the body's)
    draft.session = sessionOf(request.headers);
    draft.span = deps.tracing.startCall(request, api.name);
    // Every call's answer says how many upstream attempts it took; routing sets the real count.
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
      await authenticate(request, api);
    } finally {
      authenticating = false;
    }
    if (goneWhileAuthenticating && !draft.written) {
      await recordGone(draft);
      throw new GatewayError("invalid_request", { message: "The client closed the connection." });
    }
    await setRateHeaders(request, reply);
  });

  async function admitRead(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const auth = request.auth!;
    await admitRequest(deps.rates, auth, deps.registry.plans.get(auth.account.plan_id), (headers) =>
      reply.headers(headers),
    );
  }

  async function setRateHeaders(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Every authenticated /v1 answer carries the rate-limit windows as they stand; a call
    // replaces them with the windows after its own admission. Shared buckets that cannot be
    // read leave the headers out: listing models consumes nothing, and a call fails closed at
    // its own admission.
    const { key, account } = request.auth!;
    const subjects = rateSubjects(key, account.id, deps.registry.plans.get(account.plan_id));
    try {
      reply.headers(rateHeaders(await deps.rates.peek(subjects)));
    } catch {}
  }

  // Google's SDKs call /v1/models too (their key says so: ./gemini.ts)
  const read = { config: { reads: true, api: openaiOrGoogle } };
  const google = geminiModels(deps);
  app.get("/v1/models", read, async (request, reply) => {
    if (isGemini(request)) return google.list(request, reply);
    return reply
      .type("application/json")
      .send(
        deps.registry.plans.modelListJson(request.auth!.account.plan_id, request.auth!.key.allowed_models),
      );
  });

  // Model ids may contain "/" (meta-llama/…): the SDKs send it encoded or not, so the rest of
  // the path is the id.
  app.get("/v1/models/*", read, async (request, reply) => {
    const id = (request.params as { "*": string })["*"];
    if (isGemini(request)) return google.get(request, reply, id);
    const { account, key } = request.auth!;
    const json = deps.registry.plans.modelJson(account.plan_id, id, key.allowed_models);
    if (json === undefined)
      throw new GatewayError("model_not_found", {
        message: `The model '${id.slice(0, 128)}' does not exist or your plan does not include it.`,
        param: "model",
      });
    return reply.type("application/json").send(json);
  });

  app.post("/v1/chat/completions", callRoute(chatCompletions), relayRoute(deps, chatCompletions));
  // The agent APIs take whole conversations: a body limit of their own (src/http/body-limits.ts).
  const agentLimit = agentBody(deps.config.server);
  app.post("/v1/messages", { ...callRoute(messages), ...agentLimit }, relayRoute(deps, messages));

  // Counting is work on the gateway's CPU: it takes a request from the rate limits, and
  // nothing else (no call record, no tokens). The count waits for its account's turn on the
  // counting thread, whose queue is bounded (`counting`), and is dropped when the client
  // leaves (src/tokens/estimator.ts).
  const { counting } = deps.config;
  estimator.configure({ perAccount: counting.queue_per_account, total: counting.queue_total });
  const countRoute = { config: { api: messages }, ...agentLimit };
  app.post("/v1/messages/count_tokens", countRoute, async (request, reply) => {
    const auth = request.auth!;
    const plan = deps.registry.plans.get(auth.account.plan_id);
    await admitRequest(deps.rates, auth, plan, (headers) => reply.headers(headers));
    return untilClientLeaves(request, reply, async (signal) => {
      const { model, inputTokens } = await countTokens(request.body, { account: auth.account.id, signal });
      const resolved = deps.registry.resolve(auth.account.plan_id, model, auth.key.allowed_models);
      if (!resolved)
        throw new GatewayError("model_not_found", {
          message: `The model '${model}' does not exist or your plan does not include it.`,
          param: "model",
        });
      if (resolved.config.kind !== "chat") throw wrongModelKind(model, resolved.config.kind);
      return reply.type("application/json").send(JSON.stringify({ input_tokens: inputTokens }));
    });
  });

  // OpenAI's embeddings (docs/apis.md): a call of its own kind through the same relay.
  app.post("/v1/embeddings", callRoute(embeddings), embeddingsRoute(deps));

  // OpenAI's Responses API (docs/apis.md): calls through the relay, and the account's stored
  // responses. Another account's id answers as an unknown one.
  const stored = new ResponseStore(
    deps.store.db,
    () => deps.config.retention.responses_days,
    () => deps.config.responses,
  );
  const ownerOf = (request: FastifyRequest) => ({
    accountId: request.auth!.account.id,
    keyId: request.auth!.key.id,
  });
  const responses = responsesApi({ store: stored, logger: deps.logger });
  app.post("/v1/responses", { ...callRoute(responses), ...agentLimit }, relayRoute(deps, responses));
  const notFound = (id: string) =>
    new GatewayError("response_not_found", { message: `Response with id '${id.slice(0, 128)}' not found.` });
  app.get("/v1/responses/:id", { config: { api: responses, reads: true } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    const body = await stored.get(ownerOf(request), id);
    if (body === undefined) throw notFound(id);
    return reply.type("application/json").send(body);
  });
  app.delete("/v1/responses/:id", { config: { api: responses, reads: true } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    if (!(await stored.delete(ownerOf(request), id))) throw notFound(id);
    return reply.type("application/json").send(JSON.stringify({ id, object: "response", deleted: true }));
  });

  // Google's Gemini API (docs/apis.md): calls and counts under /v1beta and /v1, its model list.
  geminiRoutes(app, deps);
}
