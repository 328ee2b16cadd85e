// One call, in whichever client API it came (src/apis/types.ts), as its steps on the
// canonical request: resolve the model -> admit (rate limits and ledger into one hold) ->
// open the upstream answer (routing: deployments, retries, fallbacks) -> deliver it (JSON or
// a stream, rendered by the API's edge) -> finish (settle and record). Every hold is closed
// exactly once and every call recorded once, on every path.

import type { ClientCall, EmbeddingsCall } from "../apis/types.ts";
import type { ChatRequest } from "../domain/chat-request.ts";
import type { ModelKind } from "../domain/model-kinds.ts";
import { CLIENT_GONE } from "../domain/outcomes.ts";
import { fromUpstream, GatewayError } from "../errors/index.ts";
import type { Swappable } from "../lib/swappable.ts";
import { type ResolvedModel, wrongModelKind } from "../models/registry.ts";
import { formatUsd } from "../prices/usd.ts";
import type { UpstreamCall } from "../providers/types.ts";
import type { Route } from "../routing/route.ts";
import { holdFor } from "./admission.ts";
import { answerFor } from "./answer-mode.ts";
import { cappedOutput, reservationBudget } from "./budget.ts";
import type { CallContext, RelayDeps, StreamSink, SwappedSettings } from "./call.ts";
import { deliverJson } from "./deliver-json.ts";
import { deliverStream } from "./deliver-stream.ts";
import { runEmbedding } from "./embed.ts";
import type { Hold } from "./hold.ts";
import { type OpenedCompletion, openAnswer } from "./open.ts";
import { recordedParams } from "./recorded-params.ts";
import { reviewInput } from "./review.ts";
import { estimateUsage } from "./usage.ts";

export class Relay {
  readonly #deps: Omit<RelayDeps, keyof SwappedSettings>;
  readonly #settings: Pick<Swappable<SwappedSettings>, "hold">;
  /** calls in flight, so shutdown can wait for their records after their sockets are gone */
  readonly #running = new Set<Promise<unknown>>();

  /** `settings`: the models, routing and safety a call takes at its start and keeps to its end */
  constructor(
    deps: Omit<RelayDeps, keyof SwappedSettings>,
    settings: Pick<Swappable<SwappedSettings>, "hold">,
  ) {
    this.#deps = deps;
    this.#settings = settings;
  }

  /**
   * Runs the call. Non-streaming: returns the JSON body to send. Streaming, or when the
   * client left: writes or drops the answer itself and returns undefined. Before any byte is
   * sent, failures are recorded here and thrown as GatewayError for the HTTP error handler
   * to answer.
   */
  run(ctx: CallContext, call: ClientCall, sink: StreamSink): Promise<string | undefined> {
    return this.#track((deps) => this.#run(deps, ctx, call, sink));
  }

  /**
   * Runs an embeddings call (./embed.ts): returns its JSON body, or undefined when the client
   * left. Failures as for run().
   */
  embed(ctx: CallContext, call: EmbeddingsCall): Promise<string | undefined> {
    return this.#track((deps) =>
      runEmbedding(deps, ctx, call, (model) => this.#resolve(deps, ctx, { model }, "embedding")),
    );
  }

  /** Runs a call with the settings it takes at its start, counted among the calls in flight. */
  #track<T>(run: (deps: RelayDeps) => Promise<T>): Promise<T> {
    // A reload meanwhile does not touch this call: the old settings are retired after it.
    const held = this.#settings.hold();
    const { registry, router, safety, withheld } = held.value;
    const running = run({ ...this.#deps, registry, router, safety, withheld });
    this.#running.add(running);
    const forget = () => {
      this.#running.delete(running);
      held.release();
    };
    running.then(forget, forget);
    return running;
  }

  /**
   * Resolves when every call in flight has finished (and so queued its record). Shutdown
   * calls it after closing the connections: a cut call reaches its record a moment later.
   */
  async drain(): Promise<void> {
    while (this.#running.size) await Promise.allSettled([...this.#running]);
  }

  async #run(
    deps: RelayDeps,
    ctx: CallContext,
    client: ClientCall,
    sink: StreamSink,
  ): Promise<string | undefined> {
    const { auth, draft } = ctx;
    const req = client.request;
    draft.stream = req.stream === true;
    draft.publicModel = req.model;
    draft.params = recordedParams(req);
    const model = this.#resolve(deps, ctx, req);
    const plan = deps.registry.plans.get(auth.account.plan_id);
    draft.priceMultiplier = plan?.price_multiplier ?? 1;
    const safety = deps.safety.settings(auth.account, plan);
    const answer = answerFor(draft.stream, safety, client.api.name);
    draft.safetyMode = answer.safetyMode;
    if (answer.headers) ctx.setHeaders(answer.headers);
    // A key whose answers were withheld again and again is refused before anything is held.
    if (safety.enabled) deps.withheld.check(auth.key.id);

    const budget = reservationBudget(model, req, client.native, draft.priceMultiplier);
    const hold = await holdFor(deps, ctx, plan, budget);
    if (!hold) return undefined;
    const route = deps.router.route(model, ctx.clientSignal);
    const call: UpstreamCall = {
      request: req,
      upstreamModel: model.upstreamModel,
      outputBound: cappedOutput(budget, hold.reservation.tokens),
      signal: route.signal,
      native: client.native,
    };
    try {
      if (safety.enabled && deps.safety.reviewInput && !(await this.#reviewInput(deps, ctx, req, hold)))
        return undefined;
      if (answer.mode !== "json") {
        const open = async () => {
          const opened = await openAnswer(deps.metrics, ctx, route, call, true);
          try {
            await hold.mustHaveLanded();
          } catch (err) {
            await opened.stop();
            throw err;
          }
          return opened;
        };
        return await deliverStream(deps, ctx, client, open, answer.mode === "reviewed", sink, hold);
      }
      const opened = await this.#open(ctx, req, hold, route, call);
      if (!opened) return undefined;
      await hold.mustHaveLanded();
      const body = await deliverJson(deps, ctx, client, opened.completion, safety.enabled, hold);
      // The call is recorded by now: its cost is final (streams have no header left to carry it).
      if (body !== undefined) ctx.setHeaders({ "x-gateway-cost-usd": formatUsd(draft.costNanos) });
      return body;
    } catch (err) {
      // Nothing reached the client yet: the call ends here with the error it is answered with.
      const failure = fromUpstream(err);
      await deps.finisher.fail(draft, failure, hold, client.api.error(failure).status);
      throw failure;
    } finally {
      route.end();
      // Whatever happened, the reservation is closed (a no-op if a path closed it already).
      await hold.close(draft.totalTokens);
    }
  }

  #resolve(
    deps: RelayDeps,
    ctx: CallContext,
    req: Pick<ChatRequest, "model">,
    kind: ModelKind = "chat",
  ): ResolvedModel {
    const model = deps.registry.resolve(ctx.auth.account.plan_id, req.model, ctx.auth.key.allowed_models);
    if (!model)
      throw new GatewayError("model_not_found", {
        message: `The model '${req.model}' does not exist or your plan does not include it.`,
        param: "model",
      });
    if (model.config.kind !== kind) throw wrongModelKind(req.model, model.config.kind);
    // Until an attempt is made: the first deployment (routing records the one that answers).
    ctx.draft.upstreamModel = model.upstreamModel;
    ctx.draft.provider = model.deployments[0]!.providerId;
    ctx.draft.pricing = model.deployments[0]!.pricing;
    return model;
  }

  /** False when the client left during the review (recorded: nothing was charged). */
  async #reviewInput(deps: RelayDeps, ctx: CallContext, req: ChatRequest, hold: Hold): Promise<boolean> {
    try {
      await reviewInput(deps, ctx, req);
      return true;
    } catch (err) {
      if (!ctx.clientSignal.aborted) throw err;
      await this.#deps.finisher.finish(ctx.draft, CLIENT_GONE, hold);
      return false;
    }
  }

  /** The upstream's whole answer; undefined when the client left first (charged the prompt the upstream read). */
  async #open(
    ctx: CallContext,
    req: ChatRequest,
    hold: Hold,
    route: Route,
    call: UpstreamCall,
  ): Promise<OpenedCompletion | undefined> {
    try {
      return await openAnswer(this.#deps.metrics, ctx, route, call, false);
    } catch (err) {
      if (!ctx.clientSignal.aborted) throw err;
      ctx.draft.markEnded();
      await estimateUsage(ctx.draft, req, "");
      await this.#deps.finisher.finish(ctx.draft, CLIENT_GONE, hold);
      return undefined;
    }
  }
}
