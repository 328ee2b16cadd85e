// The call record of one request, filled in as the request goes (auth, model, usage) and
// finished by whoever ends the request: the relay on success, the error handler otherwise.
import type { CallOutcome } from "./outcomes.ts";
import type { CallRecord } from "./writer.ts";

export type { CallStatus } from "./outcomes.ts";
export type UsageSource = "upstream" | "estimated" | "none";
/** how a call was answered when safety applied to it (null: safety was off) */
export type SafetyMode = "json" | "reviewed";
export type SafetyVerdict = "pass" | "flagged" | "error";

export class CallDraft {
  readonly requestId: string;
  readonly startedAt: number;
  readonly #startedHr: number;
  accountId: string | null = null;
  keyId: string | null = null;
  publicModel: string | null = null;
  upstreamModel: string | null = null;
  provider: string | null = null;
  params: string | null = null;
  stream = false;
  promptTokens = 0;
  completionTokens = 0;
  usageSource: UsageSource = "none";
  /** tokens the upstream counted that are not charged: see waiveCharge() */
  unchargedTokens = 0;
  /** tokens the call held in the ledger */
  reservedTokens = 0;
  /** reported usage beyond what was held: see noteReservation() */
  overrunTokens = 0;
  ttftMs: number | null = null;
  safetyMode: SafetyMode | null = null;
  safetyVerdict: SafetyVerdict | null = null;
  safetyCategories: string[] = [];
  safetyMs: number | null = null;
  /** set once the record is queued, so no path writes it twice */
  written = false;
  /** set when the chat handler takes the call over: from then on the relay records it */
  relayed = false;

  constructor(requestId: string) {
    this.requestId = requestId;
    this.startedAt = Date.now();
    this.#startedHr = performance.now();
  }

  elapsedMs(): number {
    return Math.round(performance.now() - this.#startedHr);
  }

  markFirstToken(): void {
    this.ttftMs ??= this.elapsedMs();
  }

  setUsage(prompt: number, completion: number, source: UsageSource): void {
    this.promptTokens = prompt;
    this.completionTokens = completion;
    this.usageSource = source;
  }

  /**
   * The call failed through the gateway's own fault: the account is charged nothing, and
   * what the upstream counted stays in the record as the operator's cost.
   */
  waiveCharge(): void {
    this.unchargedTokens += this.totalTokens;
    this.promptTokens = 0;
    this.completionTokens = 0;
  }

  /**
   * What the call held, before its record is written. An estimate never charges more than was
   * reserved; reported usage is charged as reported, and what it passes the reservation by is
   * the overrun the record keeps.
   */
  noteReservation(reserved: number): void {
    this.reservedTokens = reserved;
    this.overrunTokens = 0;
    if (this.totalTokens <= reserved) return;
    if (this.usageSource === "estimated") {
      this.promptTokens = Math.min(this.promptTokens, reserved);
      this.completionTokens = reserved - this.promptTokens;
    } else this.overrunTokens = this.totalTokens - reserved;
  }

  get totalTokens(): number {
    return this.promptTokens + this.completionTokens;
  }

  finish(outcome: CallOutcome): CallRecord {
    this.written = true;
    return {
      request_id: this.requestId,
      created_at: this.startedAt,
      account_id: this.accountId,
      key_id: this.keyId,
      public_model: this.publicModel,
      upstream_model: this.upstreamModel,
      provider: this.provider,
      params: this.params,
      stream: this.stream ? 1 : 0,
      status: outcome.status,
      http_status: outcome.httpStatus,
      error_code: outcome.errorCode ?? null,
      prompt_tokens: this.promptTokens,
      completion_tokens: this.completionTokens,
      total_tokens: this.totalTokens,
      uncharged_tokens: this.unchargedTokens,
      reserved_tokens: this.reservedTokens,
      overrun_tokens: this.overrunTokens,
      usage_source: this.usageSource,
      latency_ms: this.elapsedMs(),
      ttft_ms: this.ttftMs,
      safety_mode: this.safetyMode,
      safety_verdict: this.safetyVerdict,
      safety_categories: this.safetyCategories.length ? JSON.stringify(this.safetyCategories) : null,
      safety_ms: this.safetyMs,
    };
  }
}
