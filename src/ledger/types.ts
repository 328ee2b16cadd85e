// The quota ledger's contract. It holds two things for each call, atomically together: tokens
// against the account's quota and the key's limit, and money (integer nanodollars) against
// the account's and the key's budgets, where they have one (src/prices/); and, when the key
// caps its agent sessions and the call names one, both against that session too (its own
// use across its calls, for its whole life). Implementations:
// in-process (memory-ledger.ts), the default of one process on SQLite; shared by every
// instance on PostgreSQL (postgres-ledger.ts) or through Redis (redis-ledger.ts), with the
// same semantics (shared-ledger.ts).

import type { BudgetPeriod } from "../prices/period.ts";

/** What a budget's stored counters say was spent: in total, and in the month `monthKey`. */
export interface Spent {
  total: number;
  month: number;
  /** "YYYY-MM" (UTC) that `month` is for; "" before any charge */
  monthKey: string;
}

/** A money budget in force, in nanodollars. */
export interface MoneyBudget {
  limit: number;
  period: BudgetPeriod;
}

/**
 * An agent session under its key's per-session caps: what the session may use over its whole
 * life, across all its calls (docs/accounting.md). Its use so far is the ledger's to know (the
 * session's records, or what the shared state keeps of it).
 */
export interface SessionSubject {
  id: string;
  /** null: no cap in tokens */
  limitTokens: number | null;
  /** nanodollars; null: no cap in money */
  budgetNanos: number | null;
}

/** Who a reservation charges, with the limits in force for this request. */
export interface LedgerSubject {
  accountId: string;
  /** the account's quota (the plan's unless overridden) */
  accountQuota: number;
  /** the account's consumption as stored, used when the ledger first meets the account */
  accountUsed: number;
  keyId: string;
  /** null: the key has no limit of its own */
  keyLimit: number | null;
  keyUsed: number;
  /** the account's budget (null: none), and its spending as stored, used when the ledger first meets it */
  accountBudget: MoneyBudget | null;
  accountSpent: Spent;
  keyBudget: MoneyBudget | null;
  keySpent: Spent;
  /** the call's session, only when its key caps sessions: held with the key, in the key's queue */
  session?: SessionSubject | undefined;
}

/**
 * What holding tokens costs at most, in nanodollars: `fixed` covers the prompt bound
 * (`promptTokens`), each token held beyond it costs `perToken` (output at the output price).
 */
export interface CostRule {
  fixed: number;
  perToken: number;
  promptTokens: number;
}

export interface Reservation {
  readonly id: number;
  readonly accountId: string;
  readonly keyId: string;
  /** tokens held */
  readonly tokens: number;
  /**
   * nanodollars held against the budgets that apply, which the charge never passes; null:
   * no budget applies, and the call's cost is charged as it is
   */
  readonly nanos: number | null;
  /** which budgets hold `nanos` (present when `nanos` is not null) */
  readonly holdsNanos?: { readonly account: boolean; readonly key: boolean; readonly session?: boolean };
  /** the session whose caps the hold counts against (absent: none) */
  readonly session?: string;
  /**
   * A hold journaled in the store behind its call (the Redis ledger): resolves true once its
   * row landed in time, false when it did not, and asks for the row now if it still waits.
   * Its call must not be answered before it resolves, nor answered or charged when false.
   * Absent: the hold is in the store already.
   */
  readonly landed?: () => Promise<boolean>;
}

/** Why a hold was refused: which limit, the first of these on a tie. */
export type RefusalReason =
  | "quota"
  | "key_limit"
  | "account_budget"
  | "key_budget"
  | "session_limit"
  | "session_budget";

export type ReserveResult =
  | { ok: true; reservation: Reservation }
  | {
      ok: false;
      reason: RefusalReason;
      /**
       * what consumption leaves of the tighter limit, whatever calls in flight hold: tokens
       * for a quota or key limit, nanodollars for a budget
       */
      remaining: number;
      /**
       * true: consumption leaves room, but calls in flight held it for longer than the wait
       * (or the caller gave up waiting); false: consumption alone leaves no room
       */
      held: boolean;
    };

export interface Counter {
  used: number;
  reserved: number;
}

/** What a shared ledger's shared state holds of an account's or key's money, in nanodollars. */
export interface MoneyCounter {
  spent: Spent;
  /** held by calls in flight on any instance */
  reserved: number;
}

/** A capped session's figures: tokens used and held, nanodollars spent and held. */
export interface SessionCounter extends Counter {
  spentNanos: number;
  reservedNanos: number;
}

export interface ReserveOptions {
  /** stops waiting (the client left); the result is then a refusal with `held: true` */
  signal?: AbortSignal | undefined;
  /** what the tokens held cost at most; absent: the call costs nothing */
  cost?: CostRule | undefined;
}

export interface Ledger {
  /**
   * Atomically holds between `minimum` and `wanted` tokens against both the account and
   * the key, and their cost under `options.cost` against the budgets that apply: as many
   * tokens as all of them can cover, never more than `wanted`. Refuses at once when
   * consumption alone leaves less than `minimum`, naming the tightest limit. When
   * only tokens held by calls in flight are in the way, waits for them (first come, first
   * served, up to the ledger's wait) instead of refusing.
   */
  reserve(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    options?: ReserveOptions,
  ): Promise<ReserveResult>;
  /**
   * Turns the reservation into a charge of `tokens` and `nanos` (never more than the
   * reservation's `nanos`, when it has them); the rest is released. Exactly once.
   */
  settle(reservation: Reservation, tokens: number, nanos: number): Promise<void>;
  /** Gives the whole reservation back (nothing was charged). Exactly once. */
  release(reservation: Reservation): Promise<void>;
  /** this process's view of an account (undefined: not met yet) */
  account(accountId: string): Counter | undefined;
  key(keyId: string): Counter | undefined;
  /** this process's view of an account's or key's money: nanodollars spent in total and held */
  money(kind: "account" | "key", id: string): Counter | undefined;
  /** reservations of this process not yet settled or released */
  openReservations(): number;
  /**
   * Shared ledgers: what the shared state (the store, Redis) holds for an account or key, and
   * how many holds of any instance are open; for the invariant checks and operators' tools.
   */
  inspect?(kind: "account" | "key", id: string): Promise<Counter | undefined>;
  /** the same for money: what was spent (in total and in its month) and what holds hold */
  inspectMoney?(kind: "account" | "key", id: string): Promise<MoneyCounter | undefined>;
  /**
   * What the ledger keeps of a capped session (undefined: it never held one for it): tokens
   * used and held, nanodollars spent and held. The shared state's, or this process's.
   */
  inspectSession?(keyId: string, sessionId: string): Promise<SessionCounter | undefined>;
  openHolds?(): Promise<number>;
}
