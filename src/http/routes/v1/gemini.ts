// Google's Gemini API (docs/apis.md, "Gemini API"): `models/{model}:generateContent` and
// `:streamGenerateContent` run calls through the relay, `:countTokens` counts, and the model
// list and model read answer the plan's models. Google's SDKs call `/v1beta/…` (Gemini CLI,
// @google/genai before 2) or `/v1/…` (@google/genai's default now): both are served. Under
// /v1, `GET /v1/models` is OpenAI's too; a request that carries its key as Google's clients do
// (`x-goog-api-key`, `?key=`) gets Google's answer there. Google's clients send a model's name
// unencoded (`models/meta-llama/x:generateContent`), and public model ids may hold `/` and
// `:`: the path after `models/` is the model, up to its last `:`, which names the method.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { chatCompletions } from "../../../apis/chat-completions/api.ts";
import { gemini, geminiMethod } from "../../../apis/gemini/api.ts";
import { localCount, parseCountTokens } from "../../../apis/gemini/count-tokens.ts";
import { modelList, modelResource } from "../../../apis/gemini/models.ts";
import { ID_MAX_CHARS, ID_PATTERN } from "../../../domain/config-id.ts";
import { GatewayError } from "../../../errors/index.ts";
import { admitRequest } from "../../../relay/hold.ts";
import { agentBody } from "../../body-limits.ts";
import type { GatewayDeps } from "../../deps.ts";
import { routeApi } from "../../route-api.ts";
import { untilClientLeaves } from "./client-signal.ts";
import { relayRoute } from "./relay-route.ts";

const CALLS = new Set(["generateContent", "streamGenerateContent"]);

/** The model and the method a path names, from the wildcard after `/v1beta/models/`. */
function target(rest: string): { model: string; method: string } {
  const at = rest.lastIndexOf(":");
  return at === -1 ? { model: rest, method: "" } : { model: rest.slice(0, at), method: rest.slice(at + 1) };
}

/** Whether a request runs a call (and so gets a record from its first moment): generate, not count. */
function runsCall(request: FastifyRequest): boolean {
  const path = request.url.split("?")[0]!;
  return CALLS.has(path.slice(path.lastIndexOf(":") + 1));
}

const notFound = (model: string) =>
  new GatewayError("model_not_found", {
    message: `The model 'models/${model.slice(0, ID_MAX_CHARS)}' does not exist or your plan does not include it.`,
    param: "model",
  });

/** A model id as the configuration could name it, else the 404 of a model that does not exist. */
function checkedModel(model: string): string {
  if (!model || model.length > ID_MAX_CHARS || !ID_PATTERN.test(model)) throw notFound(model);
  return model;
}

/** Whether a request carries its key as Google's clients do (they never send OpenAI's alone). */
function googleClient(request: FastifyRequest): boolean {
  if (typeof request.headers["x-goog-api-key"] === "string") return true;
  const query = request.url.indexOf("?");
  return query !== -1 && new URLSearchParams(request.url.slice(query + 1)).has("key");
}

/** The API of a route both OpenAI's and Google's clients call (`GET /v1/models`): by the key's placement. */
export function openaiOrGoogle(request: FastifyRequest): typeof gemini {
  return googleClient(request) ? gemini : chatCompletions;
}

/** Google's answers of the model list and the model read, for the routes that serve Google's clients. */
export function geminiModels(deps: GatewayDeps) {
  // the plan's chat models the key may use, as GET /v1/models lists them
  const planModels = (request: FastifyRequest) => {
    const { account, key } = request.auth!;
    return (deps.registry.plans.get(account.plan_id)?.models ?? [])
      .filter((id) => !key.allowed_models || key.allowed_models.includes(id))
      .filter((id) => deps.registry.model(id)?.config.kind !== "embedding")
      .map((id) => ({ id, ownedBy: deps.registry.model(id)?.ownedBy ?? "" }));
  };
  return {
    list(request: FastifyRequest, reply: FastifyReply) {
      const query = request.query as { pageSize?: string; pageToken?: string };
      return reply.type("application/json").send(modelList(planModels(request), query));
    },
    get(request: FastifyRequest, reply: FastifyReply, id: string) {
      const model = planModels(request).find((m) => m.id === id);
      if (!model) throw notFound(id);
      return reply.type("application/json").send(JSON.stringify(modelResource(model.id, model.ownedBy)));
    },
  };
}

/** Whether a route's request is a Google client's (routes where OpenAI's clients come too). */
export const isGemini = (request: FastifyRequest): boolean => routeApi(request) === gemini;

export function geminiRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const models = geminiModels(deps);
  const read = { config: { api: gemini, reads: true } };
  app.get("/v1beta/models", read, async (request, reply) => models.list(request, reply));
  app.get("/v1beta/models/*", read, async (request, reply) =>
    models.get(request, reply, (request.params as { "*": string })["*"]),
  );

  const count = countTokens(deps);
  // Agents send the whole conversation: the agent APIs' body limit (src/http/body-limits.ts).
  const options = { config: { api: gemini, records: runsCall }, ...agentBody(deps.config.server) };
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const { model, method } = target((request.params as { "*": string })["*"]);
    if (CALLS.has(method)) {
      const stream = method === "streamGenerateContent";
      // Without alt=sse Google streams one JSON array, written as it grows; every Google SDK
      // and Gemini CLI ask for SSE, and the gateway's streams are SSE (keep-alives included).
      if (stream && (request.query as { alt?: string }).alt !== "sse")
        throw new GatewayError("invalid_request", {
          message:
            "streamGenerateContent is served as Server-Sent Events only: add alt=sse to the query (?alt=sse), as Google's SDKs do.",
          param: "alt",
        });
      return relayRoute(deps, geminiMethod(checkedModel(model), stream))(request, reply);
    }
    if (method === "countTokens") return count(request, reply, checkedModel(model));
    throw new GatewayError("route_not_found", {
      message: `Unknown route: POST ${request.url.split("?")[0]!.slice(0, 200)}`,
    });
  };
  app.post("/v1beta/models/*", options, handler);
  app.post("/v1/models/*", options, handler);
}

/**
 * `:countTokens`: the count of a Gemini upstream of the model, as it answers it, when the model
 * has one (`x-gateway-count-source: upstream`), else (or when that upstream fails) the
 * gateway's local count (`local`). Counting takes a request from the rate limits and nothing
 * else: no record, no tokens. The local count waits for its account's turn on the counting
 * thread and is dropped when the client leaves, as the Messages API's is.
 */
function countTokens(deps: GatewayDeps) {
  return async (request: FastifyRequest, reply: FastifyReply, model: string) => {
    const auth = request.auth!;
    const plan = deps.registry.plans.get(auth.account.plan_id);
    await admitRequest(deps.rates, auth, plan, (headers) => reply.headers(headers));
    return untilClientLeaves(request, reply, async (signal) => {
      const call = parseCountTokens(request.body, model);
      const resolved = deps.registry.resolve(auth.account.plan_id, model, auth.key.allowed_models);
      if (!resolved) throw notFound(model);
      const native = { api: "gemini" as const, body: call.body, headers: {} };
      const counting = resolved.deployments.find(
        (d) => d.provider.countTokens && d.provider.sendsNatively?.(native),
      );
      if (counting)
        try {
          const answer = await counting.provider.countTokens!(native, counting.upstreamModel, signal);
          if (typeof (answer as { totalTokens?: unknown } | null)?.totalTokens === "number")
            return reply
              .header("x-gateway-count-source", "upstream")
              .type("application/json")
              .send(JSON.stringify(answer));
        } catch (err) {
          if (signal.aborted) throw err;
          request.log.warn(
            { err, deployment: counting.id },
            "countTokens: the upstream did not count; counted locally",
          );
        }
      const totalTokens = await localCount(call.request, { account: auth.account.id, signal });
      return reply
        .header("x-gateway-count-source", "local")
        .type("application/json")
        .send(JSON.stringify({ totalTokens }));
    });
  };
}
