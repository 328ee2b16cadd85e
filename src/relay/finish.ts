// The one place a call ends: its hold closed with the draft's usage, its tokens counted, and
// its record committed with the final outcome. Every path uses it: the relay on success and
// failure, the error handler for calls refused before the relay, the route for clients that
// left before it.
import type { Logger } from "pino";
import { type GatewayError, GatewayError as GatewayErrorClass } from "../errors/index.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { CallDraft } from "../records/draft.ts";
import type { CallOutcome } from "../records/outcomes.ts";
import type { RecordWriter } from "../records/writer.ts";
import type { Hold } from "./hold.ts";

/** The gateway itself failed (not the client, not the upstream): a retry may work, a charge is not fair. */
export function isGatewayFault(error: GatewayError): boolean {
  return error.status >= 500 && error.entry.type === "dev_gateway_error";
}

/** A failure's outcome: a refused prompt is its own status, so the console tells it from failures. */
export function failureOutcome(error: GatewayError): CallOutcome {
  return {
    status: error.code === "content_filter" ? "content_filter" : "error",
    httpStatus: error.status,
    errorCode: error.code,
  };
}

export class CallFinisher {
  readonly #records: RecordWriter;
  readonly #metrics: Metrics;
  readonly #logger: Logger;

  constructor(deps: { records: RecordWriter; metrics: Metrics; logger: Logger }) {
    this.#records = deps.records;
    this.#metrics = deps.metrics;
    this.#logger = deps.logger;
  }

  /**
   * Commits the record, then closes the hold with the draft's usage. An estimate is never
   * charged beyond what was held. Without its record a call is not complete: a record that
   * cannot be committed releases the hold (the call failed through the gateway's fault, so
   * nothing is charged) and throws store_unavailable.
   */
  async finish(draft: CallDraft, outcome: CallOutcome, hold?: Hold): Promise<void> {
    if (draft.written) return;
    if (hold) draft.capEstimate(hold.reservation.tokens);
    try {
      await this.#records.write(draft.finish(outcome));
    } catch (err) {
      await hold?.close(0);
      throw new GatewayErrorClass("store_unavailable", { cause: err });
    }
    await hold?.close(draft.totalTokens);
    if (draft.totalTokens && draft.publicModel) {
      this.#metrics.tokens.inc({ model: draft.publicModel, kind: "prompt" }, draft.promptTokens);
      this.#metrics.tokens.inc({ model: draft.publicModel, kind: "completion" }, draft.completionTokens);
    }
  }

  /**
   * A call that failed with `error`: recorded with the error's outcome. A failure of the
   * gateway's own (a reviewer or the store unavailable) charges nothing. The client is told
   * the error itself, so a record that cannot be committed is only logged here.
   */
  async fail(draft: CallDraft, error: GatewayError, hold?: Hold): Promise<void> {
    if (isGatewayFault(error)) draft.waiveCharge();
    try {
      await this.finish(draft, failureOutcome(error), hold);
    } catch (err) {
      this.#logger.error({ err, request_id: draft.requestId }, "could not record a failed call");
    }
  }
}
