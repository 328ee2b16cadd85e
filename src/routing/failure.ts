// What a failed attempt means for the call and for the deployment: its outcome in the
// record, whether another attempt may follow, and whether it counts against the
// deployment's health. The adapter said whether the same request could succeed again
// (UpstreamError.retryable); the operator's `routing.retry_on` says which failures to retry.
import type { RetryOn } from "../config/schema.ts";
import { UpstreamError } from "../errors/upstream-error.ts";
import type { AttemptOutcome } from "../records/draft.ts";

export interface Verdict {
  outcome: AttemptOutcome;
  status: number | null;
  /** another attempt may follow */
  retry: boolean;
  /** counts towards the deployment's cooldown */
  counts: boolean;
  /** the upstream said "too many requests" (429, or 529 "overloaded") */
  rateLimited: boolean;
  retryAfterMs: number | undefined;
}

/** A 4xx other than these says the request is wrong, not the upstream: never retried. */
const RETRYABLE_4XX = new Set([408, 409, 429]);

function failureKey(err: UpstreamError): RetryOn {
  // An error reported inside a 200 stream carries no status: the upstream's server failed.
  if (err.failure === "status") return err.status ?? 500;
  return err.failure;
}

export function judge(err: unknown, retryOn: ReadonlySet<RetryOn>): Verdict {
  if (err instanceof UpstreamError) {
    const status = err.status ?? null;
    // A 429 the adapter calls final (Anthropic's spend limit reached) is no rate limit: waiting
    // does not clear it, so it is an ordinary failure, not upstream_rate_limited.
    const rateLimited = err.retryable && (status === 429 || status === 529);
    const clientError = status !== null && status >= 400 && status < 500 && !RETRYABLE_4XX.has(status);
    const retry = err.retryable && !clientError && retryOn.has(failureKey(err));
    let outcome: AttemptOutcome;
    if (err.failure !== "status") outcome = err.failure;
    else if (rateLimited) outcome = "rate_limited";
    else outcome = status !== null && status < 500 ? "client_error" : "server_error";
    return {
      outcome,
      status,
      retry,
      counts: retry && !rateLimited,
      rateLimited,
      retryAfterMs: err.retryAfterMs,
    };
  }
  const timeout = err instanceof DOMException && err.name === "TimeoutError";
  return {
    // A timeout here is the routing's own deadline (the call's time is up): no retry. Anything
    // else is the client gone (the route tells) or a fault of ours: no retry either.
    outcome: timeout ? "timeout" : "internal",
    status: null,
    retry: false,
    counts: false,
    rateLimited: false,
    retryAfterMs: undefined,
  };
}
