// The call record of one request, filled in as the request goes (auth, model, usage) and
// finished by whoever ends the request: the relay on success, the error handler otherwise.

import type { ApiName } from "../domain/api-names.ts";
import type { CallOutcome } from "../domain/outcomes.ts";
import type { CallSession } from "../domain/sessions.ts";
import type { CallSpan } from "../observability/tracing.ts";
import { costOf, type Pricing } from "../prices/pricing.ts";
import type { CallRecord } from "./call-record.ts";

export type { CallStatus } from "../domain/outcomes.ts";
export type UsageSource = "upstream" | "estimated" | "none";
/** how a call was answered when safety applied to it (null: safety was off) */
export type SafetyMode = "json" | "reviewed";
export type SafetyVerdict = "pass" | "flagged" | "error";

/** How one upstream attempt of a call ended (src/routing/failure.ts decides). */
export type AttemptOutcome =
  | "ok"
  | "rate_limited"
  | "server_error"
  | "client_error"
  | "timeout"
  | "network"
  | "malformed"
  | "aborted"
  | "internal";

/** One upstream attempt, as the record keeps it. */
export interface AttemptRecord {
  /** the public model it was for: the one asked for, or a fallback */
  model: string;
  provider: string;
  upstream_model: string;
  outcome: AttemptOutcome;
  /** the upstream's HTTP status, when it answered one */
  status: number | null;
  /** from sending the attempt to its first chunk (streams), whole answer (JSON) or failure */
  ms: number;
}

export class CallDraft {
  readonly requestId: string;
  /** the client API the call came in */
  readonly api: ApiName;
  readonly startedAt: number;
  readonly #startedHr: number;
  #endedMs: number | undefined;
  accountId: string | null = null;
  keyId: string | null = null;
  publicModel: string | null = null;
  upstreamModel: string | null = null;
  provider: string | null = null;
  params: string | null = null;
  /** the agent session the client named (src/apis/session.ts); null: none */
  session: CallSession | null = null;
  /** what the answering attempt left out of the client's request (src/providers/passthrough.ts) */
  dropped: readonly string[] = [];
  stream = false;
  promptTokens = 0;
  completionTokens = 0;
  usageSource: UsageSource = "none";
  /** the breakdown the upstream reported: of the prompt, cache reads and writes; of the completion, reasoning */
  cachedTokens = 0;
  cacheWriteTokens = 0;
  reasoningTokens = 0;
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
  /** the prices of the deployment that answered (or was first in line); null: no model resolved */
  pricing: Pricing | null = null;
  /** the plan's price multiplier */
  priceMultiplier = 1;
  /** nanodollars charged, and cost not charged: see noteCost() */
  costNanos = 0;
  unchargedCostNanos = 0;
  #waived = false;
  /** the upstream attempts, in order (the routing's own list) */
  attempts: readonly AttemptRecord[] = [];
  /** set once the record is queued, so no path writes it twice */
  written = false;
  /** set when the route's handler takes the call over: from then on the relay records it */
  relayed = false;
  /** how the call ended, once its record is made (the request's log line says it) */
  outcome: CallOutcome | null = null;
  /** the call's trace span, when tracing is on (src/observability/tracing.ts) */
  span: CallSpan | undefined = undefined;

  constructor(requestId: string, api: ApiName = "chat.completions") {
    this.requestId = requestId;
    this.api = api;
    this.startedAt = Date.now();
    this.#startedHr = performance.now();
  }

  elapsedMs(): number {
    return Math.round(performance.now() - this.#startedHr);
  }

  markFirstToken(): void {
    this.ttftMs ??= this.elapsedMs();
  }

  /**
   * The call ended now (its upstream failed, its client left): its latency stops here. What
   * may follow before the record (a local estimate of its usage, counted off the event loop)
   * is bookkeeping, not the call.
   */
  markEnded(): void {
    this.#endedMs ??= this.elapsedMs();
  }

  /** `breakdown`: what the upstream reported of cache reads, cache writes and reasoning; none for estimates */
  setUsage(
    prompt: number,
    completion: number,
    source: UsageSource,
    breakdown?: { cachedInput: number; cacheWrite: number; reasoning: number },
  ): void {
    this.promptTokens = prompt;
    this.completionTokens = completion;
    this.usageSource = source;
    this.cachedTokens = breakdown?.cachedInput ?? 0;
    this.cacheWriteTokens = breakdown?.cacheWrite ?? 0;
    this.reasoningTokens = breakdown?.reasoning ?? 0;
  }

  /**
   * The call failed through the gateway's own fault: the account is charged nothing, and
   * what the upstream counted stays in the record as the operator's cost.
   */
  waiveCharge(): void {
    this.unchargedCostNanos += this.#cost(); // costed before it is waived: a waived draft costs nothing
    this.#waived = true;
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

  /** The token kinds at the call's prices; nothing once the charge is waived. */
  #cost(): number {
    if (!this.pricing || this.#waived) return 0;
    const usage = {
      prompt: this.promptTokens,
      completion: this.completionTokens,
      cachedInput: this.cachedTokens,
      cacheWrite: this.cacheWriteTokens,
      reasoning: this.reasoningTokens,
    };
    return costOf(usage, this.pricing, this.priceMultiplier).total;
  }

  /**
   * The call's cost, after noteReservation(): charged as computed, but never beyond the
   * nanodollars a budget held for it (`heldNanos`, null when no budget held any); what a
   * budget could not cover is kept as uncharged cost.
   */
  noteCost(heldNanos: number | null): void {
    const cost = this.#cost();
    this.costNanos = heldNanos === null ? cost : Math.min(cost, heldNanos);
    this.unchargedCostNanos += cost - this.costNanos;
  }

  get totalTokens(): number {
    return this.promptTokens + this.completionTokens;
  }

  finish(outcome: CallOutcome): CallRecord {
    this.written = true;
    this.outcome = outcome;
    return {
      request_id: this.requestId,
      created_at: this.startedAt,
      api: this.api,
      account_id: this.accountId,
      key_id: this.keyId,
      public_model: this.publicModel,
      upstream_model: this.upstreamModel,
      provider: this.provider,
      params: withDropped(this.params, this.dropped),
      stream: this.stream ? 1 : 0,
      status: outcome.status,
      http_status: outcome.httpStatus,
      error_code: outcome.errorCode ?? null,
      prompt_tokens: this.promptTokens,
      completion_tokens: this.completionTokens,
      total_tokens: this.totalTokens,
      uncharged_tokens: this.unchargedTokens,
      cached_tokens: this.cachedTokens,
      cache_write_tokens: this.cacheWriteTokens,
      reasoning_tokens: this.reasoningTokens,
      reserved_tokens: this.reservedTokens,
      overrun_tokens: this.overrunTokens,
      usage_source: this.usageSource,
      latency_ms: this.#endedMs ?? this.elapsedMs(),
      ttft_ms: this.ttftMs,
      safety_mode: this.safetyMode,
      safety_verdict: this.safetyVerdict,
      safety_categories: this.safetyCategories.length ? JSON.stringify(this.safetyCategories) : null,
      safety_ms: this.safetyMs,
      attempts: this.attempts.length ? JSON.stringify(this.attempts) : null,
      cost_nanos: this.costNanos,
      uncharged_cost_nanos: this.unchargedCostNanos,
      cost_source: this.pricing?.source ?? null,
      session_id: this.session?.id ?? null,
      session_client: this.session?.client ?? null,
    };
  }
}

/**
 * The recorded parameters with what the call's upstream was not sent (`dropped`), so a record
 * explains an answer that ignored part of its request.
 */
function withDropped(params: string | null, dropped: readonly string[]): string | null {
  if (!dropped.length) return params;
  return JSON.stringify({
    ...(params ? JSON.parse(params) : {}),
    dropped: [...new Set(dropped)].slice(0, 64),
  });
}
