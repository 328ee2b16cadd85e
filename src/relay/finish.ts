// The one place a call ends: its hold closed with the draft's usage, its tokens counted, and
// its record committed with the final outcome. Every path uses it: the relay on success and
// failure, the error handler for calls refused before the relay, the route for clients that
// left before it.
import type { Logger } from "pino";
import type { CallOutcome } from "../domain/outcomes.ts";
import { type GatewayError, GatewayError as GatewayErrorClass } from "../errors/index.ts";
import type { Registry } from "../models/registry.ts";
import type { Metrics } from "../observability/metrics.ts";
import { usd } from "../prices/usd.ts";
import type { CallDraft } from "../records/draft.ts";
import type { RecordWriter } from "../records/writer.ts";
import type { Hold } from "./hold.ts";

/** The gateway itself failed (not the client, not the upstream): a retry may work, a charge is not fair. */
export function isGatewayFault(error: GatewayError): boolean {
  return error.status >= 500 && error.entry.type === "dev_gateway_error";
}

/**
 * A failure's outcome: a refused prompt is its own status, so the console tells it from
 * failures. `httpStatus`: what the client's API answered it with, where that differs from the
 * catalog's (Anthropic's 529 for every upstream rate-limited).
 */
export function failureOutcome(error: GatewayError, httpStatus = error.status): CallOutcome {
  return {
    status: error.code === "content_filter" ? "content_filter" : "error",
    httpStatus,
    errorCode: error.code,
  };
}

/** The call's span, when it is traced, ends with its record. */
function endSpan(draft: CallDraft, outcome: CallOutcome): void {
  draft.span?.end({
    status: outcome.status,
    httpStatus: outcome.httpStatus,
    errorCode: outcome.errorCode ?? null,
    model: draft.publicModel,
    accountId: draft.accountId,
    promptTokens: draft.promptTokens,
    completionTokens: draft.completionTokens,
    costUsd: usd(draft.costNanos),
    attempts: draft.attempts.length,
  });
}

/** What a call's end needs of the record writer: its commit, and nothing a test must build a store for. */
export type RecordSink = Pick<RecordWriter, "write">;

export class CallFinisher {
  readonly #records: RecordSink;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  /** read at each use: a configuration reload replaces the registry (./settings.ts) */
  readonly #models: { readonly registry: Registry };

  constructor(deps: { records: RecordSink; metrics: Metrics; logger: Logger; readonly registry: Registry }) {
    this.#records = deps.records;
    this.#metrics = deps.metrics;
    this.#logger = deps.logger;
    this.#models = deps;
  }

  /**
   * Commits the record, then closes the hold with the draft's usage. An estimate is never
   * charged beyond what was held; reported usage is, and the overrun is recorded, counted and
   * corrected. Without its record a call is not complete: a record that cannot be committed
   * releases the hold (the call failed through the gateway's fault, so nothing is charged)
   * and throws store_unavailable.
   */
  async finish(draft: CallDraft, outcome: CallOutcome, hold?: Hold): Promise<void> {
    if (draft.written) return;
    // A hold whose journal row did not land in time charges nothing (Reservation.landed); and
    // the record, which marks that row, is committed after it. Another end may have come
    // meanwhile: the first one written is the call's.
    const landed = hold ? await hold.landed() : true;
    if (draft.written) return;
    if (!landed) draft.waiveCharge();
    if (hold) draft.noteReservation(hold.reservation.tokens);
    draft.noteCost(hold?.reservation.nanos ?? null);
    try {
      await this.#records.write(draft.finish(outcome), hold?.reservation);
    } catch (err) {
      await hold?.close(0);
      const error = new GatewayErrorClass("store_unavailable", { cause: err });
      endSpan(draft, failureOutcome(error));
      throw error;
    }
    endSpan(draft, outcome);
    await hold?.close(draft.totalTokens, draft.costNanos);
    if (draft.costNanos && draft.publicModel)
      this.#metrics.observeCost(draft.publicModel, draft.accountId, usd(draft.costNanos));
    this.#metrics.observeCall(draft.api, outcome.status);
    if (draft.totalTokens && draft.publicModel) {
      const { publicModel: model, api } = draft;
      this.#metrics.tokens.inc({ model, kind: "prompt", api }, draft.promptTokens);
      this.#metrics.tokens.inc({ model, kind: "completion", api }, draft.completionTokens);
    }
    if (draft.overrunTokens && hold) this.#overrun(draft, hold);
  }

  /**
   * The upstream counted more than the bound: the record keeps the overrun, the metric counts
   * it, and the model's per-request overhead grows so the next reservations cover this
   * request's prompt. The growth lives in this process (lost on restart); the warning says
   * which setting makes it permanent.
   */
  #overrun(draft: CallDraft, hold: Hold): void {
    const model = draft.publicModel!;
    this.#metrics.overrunTokens.inc({ model }, draft.overrunTokens);
    const { promptBound, perRequestOverhead } = hold.budget;
    const shortfall = draft.promptTokens - promptBound;
    const overheads = this.#models.registry.model(model)?.overheads;
    // From the overhead this reservation used, so concurrent overruns grow it once, not once each.
    if (overheads && shortfall > 0)
      overheads.per_request = Math.max(overheads.per_request, perRequestOverhead + shortfall);
    this.#logger.warn(
      {
        request_id: draft.requestId,
        model,
        reserved: draft.reservedTokens,
        charged: draft.totalTokens,
        overrun: draft.overrunTokens,
        prompt_bound: promptBound,
        prompt_counted: draft.promptTokens,
        per_request_overhead: overheads?.per_request,
      },
      `the upstream of model ${model} counted ${draft.overrunTokens} tokens more than were reserved; ` +
        (shortfall > 0
          ? `its prompt_overhead.per_request is now ${overheads?.per_request} in this process: set it in the configuration to keep it`
          : "the completion passed the output bound sent upstream"),
    );
  }

  /**
   * A call that failed with `error`, answered with `httpStatus`: recorded with the error's
   * outcome. A failure of the gateway's own (a reviewer or the store unavailable) charges
   * nothing. The client is told the error itself, so a record that cannot be committed is
   * only logged here.
   */
  async fail(draft: CallDraft, error: GatewayError, hold?: Hold, httpStatus = error.status): Promise<void> {
    if (isGatewayFault(error)) draft.waiveCharge();
    try {
      await this.finish(draft, failureOutcome(error, httpStatus), hold);
    } catch (err) {
      this.#logger.error({ err, request_id: draft.requestId }, "could not record a failed call");
    }
  }
}
