// Admission: the rate limits and the ledger, taken together into one hold that is closed
// exactly once, whichever path ends the call.

import type { ApiKey } from "../accounts/keys.ts";
import type { AuthContext } from "../auth/key-cache.ts";
import type { PlanConfig } from "../config/schema.ts";
import type { CallSession } from "../domain/sessions.ts";
import { GatewayError } from "../errors/index.ts";
import type {
  Ledger,
  MoneyBudget,
  Reservation,
  ReserveResult,
  SessionSubject,
  Spent,
} from "../ledger/types.ts";
import { resetsAt } from "../prices/period.ts";
import { formatUsd } from "../prices/usd.ts";
import {
  type Admission,
  type RateLimits,
  type RateTicket,
  rateHeaders,
  rateSubjects,
} from "../rate-limits/rate-limiter.ts";
import type { Budget } from "./budget.ts";

export interface HoldDeps {
  ledger: Ledger;
  rates: RateLimits;
  /** the clock budget periods are read with */
  now: () => number;
}

const LANDED = Promise.resolve(true);

/** The reservation of one request and its rate-limit ticket, closed exactly once. */
export class Hold {
  readonly #deps: HoldDeps;
  readonly #ticket: RateTicket;
  readonly reservation: Reservation;
  /** what the reservation was sized from */
  readonly budget: Budget;
  #closed = false;

  constructor(deps: HoldDeps, reservation: Reservation, ticket: RateTicket, budget: Budget) {
    this.#deps = deps;
    this.reservation = reservation;
    this.#ticket = ticket;
    this.budget = budget;
  }

  /**
   * Whether the hold is in the store (Reservation.landed): waits for its journal row, if it is
   * on its way, and asks for it now. Nothing is answered before it, nor charged when false.
   */
  landed(): Promise<boolean> {
    return this.reservation.landed?.() ?? LANDED;
  }

  /** Refuses the call (ledger_unavailable) when its hold is not in the store (landed). */
  async mustHaveLanded(): Promise<void> {
    if (!(await this.landed()))
      throw new GatewayError("ledger_unavailable", {
        message:
          "The gateway could not journal this call's hold in its store in time, so it does not answer it. Retry later.",
      });
  }

  /**
   * Charges `tokens` and `nanos` (releasing the rest), or releases everything when both are
   * 0. No-op after the first.
   */
  async close(tokens: number, nanos = 0): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deps.rates.settle(this.#ticket, tokens);
    if (tokens > 0 || nanos > 0) await this.#deps.ledger.settle(this.reservation, tokens, nanos);
    else await this.#deps.ledger.release(this.reservation);
  }
}

/** The 429 of a rate-limit refusal, with the waits the OpenAI SDKs honour. */
function rateLimited(refusal: Extract<Admission, { ok: false }>): GatewayError {
  const seconds = Math.max(1, Math.ceil(refusal.retryAfterMs / 1000));
  return new GatewayError(refusal.kind === "requests" ? "rate_limited_requests" : "rate_limited_tokens", {
    headers: { "retry-after": String(seconds), "retry-after-ms": String(refusal.retryAfterMs) },
  });
}

/**
 * Takes the call's request from its rate limits: the first step of every call, before its
 * body is validated or anything costly is done, so refused and malformed calls count too.
 */
export async function admitRequest(
  rates: RateLimits,
  auth: AuthContext,
  plan: PlanConfig | undefined,
  setHeaders: (headers: Record<string, string>) => void,
): Promise<RateTicket> {
  const admitted = await rates.admit(rateSubjects(auth.key, auth.account.id, plan), 0);
  setHeaders(rateHeaders(admitted.state));
  if (!admitted.ok) throw rateLimited(admitted);
  return admitted.ticket;
}

/**
 * The call's session as the ledger holds it: only when its key caps sessions, so a call
 * without a session, or of a key without caps, holds nothing more than before.
 */
function sessionSubject(
  auth: AuthContext,
  session: CallSession | null | undefined,
): SessionSubject | undefined {
  const { session_limit_tokens: limitTokens, session_budget_nanos: budgetNanos } = auth.key;
  if (!session || (limitTokens === null && budgetNanos === null)) return undefined;
  return { id: session.id, limitTokens, budgetNanos };
}

/**
 * Takes the call's tokens from its rate limits, then holds them in the ledger (with its
 * session's, when its key caps sessions), waiting (until `signal` aborts) for tokens held by
 * calls in flight. Refusals throw the catalog's 429s; the rate-limit headers are set either way.
 */
export async function admit(
  deps: HoldDeps,
  auth: AuthContext,
  plan: PlanConfig | undefined,
  ticket: RateTicket,
  budget: Budget,
  setHeaders: (headers: Record<string, string>) => void,
  signal?: AbortSignal,
  session?: CallSession | null,
): Promise<Hold> {
  const admitted = await deps.rates.admitTokens(ticket, budget.wanted);
  setHeaders(rateHeaders(admitted.state));
  if (!admitted.ok) throw rateLimited(admitted);
  const capped = sessionSubject(auth, session);
  let reserved: ReserveResult;
  try {
    reserved = await deps.ledger.reserve(
      {
        accountId: auth.account.id,
        accountQuota: auth.account.quota_tokens ?? plan?.quota_tokens ?? 0,
        accountUsed: auth.account.used_tokens,
        keyId: auth.key.id,
        keyLimit: auth.key.limit_tokens,
        keyUsed: auth.key.used_tokens,
        accountBudget: moneyBudget(auth.account),
        accountSpent: spentOf(auth.account),
        keyBudget: moneyBudget(auth.key),
        keySpent: spentOf(auth.key),
        ...(capped ? { session: capped } : {}),
      },
      budget.wanted,
      budget.minimum,
      { signal, cost: budget.cost },
    );
  } catch (err) {
    // a ledger that failed (unreachable, the caller gone) reserved nothing: the tokens taken
    // from the rate limits above come back now, not as the minute's bucket refills
    deps.rates.settle(admitted.ticket, 0);
    throw err;
  }
  if (!reserved.ok) {
    deps.rates.settle(admitted.ticket, 0); // the request counts; its tokens were never used
    throw ledgerRefusal(reserved, auth, deps.now(), session);
  }
  return new Hold(deps, reserved.reservation, admitted.ticket, budget);
}

type BudgetRow = Pick<
  ApiKey,
  "budget_nanos" | "budget_period" | "spent_nanos" | "month_spent_nanos" | "spent_month"
>;

function moneyBudget(row: BudgetRow): MoneyBudget | null {
  if (row.budget_nanos === null) return null;
  return { limit: row.budget_nanos, period: row.budget_period === "month" ? "month" : "none" };
}

function spentOf(row: BudgetRow): Spent {
  return { total: row.spent_nanos, month: row.month_spent_nanos, monthKey: row.spent_month };
}

/** The 429 of a ledger refusal, saying how many tokens consumption leaves, or how much money. */
function ledgerRefusal(
  refusal: Extract<ReserveResult, { ok: false }>,
  auth: AuthContext,
  now: number,
  session: CallSession | null | undefined,
): GatewayError {
  if (refusal.reason === "session_limit" || refusal.reason === "session_budget")
    return sessionRefusal(refusal, auth, session?.id ?? "");
  if (refusal.reason === "account_budget" || refusal.reason === "key_budget") {
    const row = refusal.reason === "key_budget" ? auth.key : auth.account;
    const which = refusal.reason === "key_budget" ? "This API key's budget" : "The account's budget";
    const resets = resetsAt(moneyBudget(row)?.period ?? "none", now);
    const left = formatUsd(refusal.remaining);
    const when = resets ? `it resets at ${resets.toISOString()}` : "it does not reset";
    return new GatewayError(refusal.held ? "limit_held" : "budget_exceeded", {
      message: refusal.held
        ? `${which} has $${left} left, held by calls still in flight. Retry after the time in the retry-after header.`
        : `${which} cannot cover this request ($${left} left; ${when}).`,
    });
  }
  const limit = refusal.reason === "key_limit" ? "This API key's token limit" : "The account's token quota";
  if (refusal.held)
    return new GatewayError("limit_held", {
      message: `${limit} has ${refusal.remaining} tokens left, held by calls still in flight. Retry after the time in the retry-after header.`,
    });
  return new GatewayError(refusal.reason === "key_limit" ? "key_limit_exceeded" : "quota_exceeded", {
    message: `${limit} cannot cover this request (${refusal.remaining} tokens left).`,
  });
}

/**
 * A session's cap refused the call: the message names the cap, what the session has left and
 * the session, so an agent's user sees which run stopped and why (the key may go on with
 * another session).
 */
function sessionRefusal(
  refusal: Extract<ReserveResult, { ok: false }>,
  auth: AuthContext,
  sessionId: string,
): GatewayError {
  const money = refusal.reason === "session_budget";
  const cap = money
    ? `This API key's per-session budget of $${formatUsd(auth.key.session_budget_nanos ?? 0)}`
    : `This API key's per-session limit of ${auth.key.session_limit_tokens ?? 0} tokens`;
  const left = money ? `$${formatUsd(refusal.remaining)}` : `${refusal.remaining} tokens`;
  if (refusal.held)
    return new GatewayError("limit_held", {
      message: `${cap} leaves session '${sessionId}' ${left}, held by its calls still in flight. Retry after the time in the retry-after header.`,
    });
  return new GatewayError(money ? "session_budget_exceeded" : "session_limit_exceeded", {
    message: `${cap} cannot cover this request in session '${sessionId}' (${left} left). Start a new session, or ask for the cap to be raised.`,
  });
}
