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
   * Closes the hold with the draft's usage and commits the record. Without its record a call
   * is not complete: a record that cannot be committed throws store_unavailable. The charge
   * stays in the ledger (the upstream did the work), which errs against overspending.
   */
  async finish(draft: CallDraft, outcome: CallOutcome, hold?: Hold): Promise<void> {
    if (draft.written) return;
    if (hold) await hold.close(draft.totalTokens);
    if (draft.totalTokens && draft.publicModel) {
      this.#metrics.tokens.inc({ model: draft.publicModel, kind: "prompt" }, draft.promptTokens);
      this.#metrics.tokens.inc({ model: draft.publicModel, kind: "completion" }, draft.completionTokens);
    }
    try {
      await this.#records.write(draft.finish(outcome));
    } catch (err) {
      throw new GatewayErrorClass("store_unavailable", { cause: err });
    }
  }

  /**
   * A call that failed with `error`: recorded with the error's outcome. The client is told
   * the error itself, so a record that cannot be committed is only logged here.
   */
  async fail(draft: CallDraft, error: GatewayError, hold?: Hold): Promise<void> {
    try {
      await this.finish(draft, failureOutcome(error), hold);
    } catch (err) {
      this.#logger.error({ err, request_id: draft.requestId }, "could not record a failed call");
    }
  }
}
