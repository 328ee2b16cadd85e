// The review policy: whether content safety applies to a call (global setting, then the plan's,
// then the account's override), and one review: the reviewer chain over one text, in order,
// within `safety.timeout_ms`, failing closed on any error or timeout.
import type { PlanConfig, SafetyConfig } from "../config/schema.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { Reviewer, ReviewStage, ReviewVerdict } from "./types.ts";

export type SafetyStreaming = "json" | "reviewed";

export interface SafetySettings {
  enabled: boolean;
  /** how a chat completion request with `stream: true` is answered while safety is on */
  streaming: SafetyStreaming;
}

/** The settings a call runs with: also whether anyone chose the streaming mode. */
export interface CallSafety extends SafetySettings {
  /**
   * whether the account, its plan or the global setting names `streaming`; when none does,
   * Messages and Responses streams are reviewed streams (src/relay/answer-mode.ts)
   */
  streamingChosen: boolean;
}

export interface ReviewOutcome {
  flagged: boolean;
  /** the flagging reviewer's categories; empty when passed */
  categories: string[];
  /** the reviewer that flagged, if one did */
  reviewer: string | null;
  ms: number;
}

/** An account's own safety columns; null inherits. */
export interface SafetyOverride {
  safety: string | null;
  safety_streaming: string | null;
}

/** The account's override wins, then the plan's, then the global setting. */
export function safetySettings(
  global: SafetyConfig,
  plan: PlanConfig | undefined,
  account: SafetyOverride,
): SafetySettings {
  const enabled =
    account.safety === "on"
      ? true
      : account.safety === "off"
        ? false
        : (plan?.safety.enabled ?? global.enabled);
  const streaming = (chosenStreaming(global, plan, account) ?? "json") as SafetyStreaming;
  return { enabled, streaming };
}

/** The streaming mode the account, its plan or the global setting names, if any does. */
function chosenStreaming(
  global: SafetyConfig,
  plan: PlanConfig | undefined,
  account: SafetyOverride,
): string | undefined {
  return account.safety_streaming ?? plan?.safety.streaming ?? global.streaming;
}

/** The review could not reach a verdict: a reviewer failed, or time ran out. Fails the call closed. */
export class ReviewFailed extends Error {
  override name = "ReviewFailed";
}

export class SafetyPolicy {
  readonly #config: SafetyConfig;
  readonly #reviewers: readonly Reviewer[];
  readonly #metrics: Metrics;

  constructor(config: SafetyConfig, reviewers: readonly Reviewer[], metrics: Metrics) {
    this.#config = config;
    this.#reviewers = reviewers;
    this.#metrics = metrics;
  }

  get reviewInput(): boolean {
    return this.#config.review_input;
  }

  /** reviewed streaming: the longest stretch of output held back before it is reviewed */
  get segmentTokens(): number {
    return this.#config.segment_tokens;
  }

  settings(account: SafetyOverride, plan: PlanConfig | undefined): CallSafety {
    return {
      ...safetySettings(this.#config, plan, account),
      streamingChosen: chosenStreaming(this.#config, plan, account) !== undefined,
    };
  }

  /** the withheld answers a key may get within a window before its calls are refused */
  get withheldLimit(): SafetyConfig["withheld_limit"] {
    return this.#config.withheld_limit;
  }

  /**
   * Runs the chain over one text; the first flag decides. Throws ReviewFailed when a reviewer
   * fails or the time is up, and rethrows the client's abort reason when the client left.
   */
  async review(
    stage: ReviewStage,
    text: string,
    context: string | undefined,
    clientSignal: AbortSignal,
  ): Promise<ReviewOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    // Nothing to release, nothing to review.
    if (!text.trim()) return { flagged: false, categories: [], reviewer: null, ms: 0 };
    if (!this.#reviewers.length) {
      this.#metrics.safetyReviews.inc({ stage, reviewer: "none", outcome: "error" });
      throw new ReviewFailed("no content safety reviewer is configured");
    }
    // The deadline and its race cost more than a local reviewer's whole review (timers, an
    // AbortSignal.any, listeners), and could not interrupt one anyway: a synchronous review
    // holds the event loop. So they are set up only when the chain reaches a networked one.
    let guard: ReviewGuard | undefined;
    try {
      for (const reviewer of this.#reviewers) {
        const one = performance.now();
        let outcome = "error";
        try {
          let verdict: ReviewVerdict;
          if (reviewer.local) verdict = await reviewer.review({ text, stage, context, signal: clientSignal });
          else {
            guard ??= new ReviewGuard(clientSignal, this.#config.timeout_ms);
            const request = { text, stage, context, signal: guard.signal };
            // A reviewer that ignores its signal must not hold the call: the race ends at the abort.
            verdict = await Promise.race([reviewer.review(request), guard.aborted]);
          }
          outcome = verdict.flagged ? "flag" : "pass";
          if (verdict.flagged) {
            const categories = verdict.categories.length ? verdict.categories : [reviewer.type];
            for (const category of categories) this.#metrics.safetyFlags.inc({ stage, category });
            return { flagged: true, categories, reviewer: reviewer.type, ms: elapsed() };
          }
        } catch (err) {
          if (clientSignal.aborted) throw clientSignal.reason;
          // Past the deadline the reviewer's own abort error is not the story: the timeout is.
          if (guard?.timedOut) throw guard.reason;
          if (err instanceof ReviewFailed) throw err;
          const reason = err instanceof Error ? err.message : String(err);
          throw new ReviewFailed(`the ${reviewer.type} reviewer failed: ${reason}`, { cause: err });
        } finally {
          this.#metrics.observeReview(stage, reviewer.type, outcome, (performance.now() - one) / 1000);
        }
      }
      return { flagged: false, categories: [], reviewer: null, ms: elapsed() };
    } finally {
      guard?.dispose();
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.#reviewers.map((r) => r.close?.()));
  }
}

/** The deadline of one review and the client's abort, as one signal and one rejecting promise. */
class ReviewGuard {
  readonly signal: AbortSignal;
  readonly aborted: Promise<never>;
  readonly #deadline = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #onAbort: () => void = () => {};

  constructor(clientSignal: AbortSignal, timeoutMs: number) {
    this.#timer = setTimeout(
      () => this.#deadline.abort(new ReviewFailed(`the review took longer than ${timeoutMs} ms`)),
      timeoutMs,
    );
    this.signal = AbortSignal.any([clientSignal, this.#deadline.signal]);
    this.aborted = new Promise<never>((_, reject) => {
      this.#onAbort = () => reject(this.signal.reason);
      this.signal.addEventListener("abort", this.#onAbort, { once: true });
    });
    this.aborted.catch(() => {});
  }

  get timedOut(): boolean {
    return this.#deadline.signal.aborted;
  }

  get reason(): unknown {
    return this.#deadline.signal.reason;
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.signal.removeEventListener("abort", this.#onAbort);
  }
}
