// A ledger and rate limits that only note what they are asked, for the unit tests of a call's
// admission and end (src/relay/hold.test.ts, finish.test.ts). A real ledger hides a second
// settle behind its own bookkeeping; these keep every call, in order, so a test can say which
// figures closed a hold and that nothing closed it twice.

import type {
  Counter,
  Ledger,
  LedgerSubject,
  Reservation,
  ReserveOptions,
  ReserveResult,
} from "../../src/ledger/types.ts";
import type {
  Admission,
  RateLimits,
  RateState,
  RateSubject,
  RateTicket,
} from "../../src/rate-limits/rate-limiter.ts";

export type LedgerCall =
  | { op: "reserve"; subject: LedgerSubject; wanted: number; minimum: number; options?: ReserveOptions }
  | { op: "settle"; reservation: Reservation; tokens: number; nanos: number }
  | { op: "release"; reservation: Reservation };

/** A reservation of `tokens` (and `nanos` held against a budget, null: none), as a ledger grants it. */
export function reservation(tokens: number, nanos: number | null = null, id = 1): Reservation {
  return {
    id,
    accountId: "acc_1",
    keyId: "key_1",
    tokens,
    nanos,
    ...(nanos === null ? {} : { holdsNanos: { account: true, key: false } }),
  };
}

export class FakeLedger implements Ledger {
  readonly calls: LedgerCall[] = [];
  /** what reserve() answers; by default it holds all that is wanted, and no money */
  answer: (wanted: number, minimum: number) => ReserveResult = (wanted) => ({
    ok: true,
    reservation: reservation(wanted),
  });
  /** set: settle() and release() reject with it (after noting the call) */
  failure: Error | undefined;
  readonly #open = new Set<Reservation>();

  async reserve(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    options?: ReserveOptions,
  ): Promise<ReserveResult> {
    this.calls.push({ op: "reserve", subject, wanted, minimum, ...(options ? { options } : {}) });
    const result = this.answer(wanted, minimum);
    if (result.ok) this.#open.add(result.reservation);
    return result;
  }

  async settle(reservation: Reservation, tokens: number, nanos: number): Promise<void> {
    this.calls.push({ op: "settle", reservation, tokens, nanos });
    this.#open.delete(reservation);
    if (this.failure) throw this.failure;
  }

  async release(reservation: Reservation): Promise<void> {
    this.calls.push({ op: "release", reservation });
    this.#open.delete(reservation);
    if (this.failure) throw this.failure;
  }

  /** the settles and releases, in order: one per hold closed */
  closes(): Exclude<LedgerCall, { op: "reserve" }>[] {
    return this.calls.filter((c) => c.op !== "reserve");
  }

  account(): Counter | undefined {
    return undefined;
  }
  key(): Counter | undefined {
    return undefined;
  }
  money(): Counter | undefined {
    return undefined;
  }
  openReservations(): number {
    return this.#open.size;
  }
}

export type RateCall =
  | { op: "admit"; subjects: readonly RateSubject[]; tokens: number }
  | { op: "admitTokens"; ticket: RateTicket; tokens: number }
  | { op: "settle"; ticket: RateTicket; tokens: number };

export type RateRefusal = Extract<Admission, { ok: false }>;

export class FakeRates implements RateLimits {
  readonly calls: RateCall[] = [];
  /** the windows every answer carries */
  state: RateState = { requests: { limit: 60, remaining: 59, resetMs: 1_000 } };
  /** set: admit() refuses with it */
  refuseRequest: Omit<RateRefusal, "state"> | undefined;
  /** set: admitTokens() refuses with it */
  refuseTokens: Omit<RateRefusal, "state"> | undefined;

  admit(subjects: readonly RateSubject[], tokens: number): Admission {
    this.calls.push({ op: "admit", subjects, tokens });
    if (this.refuseRequest) return { ...this.refuseRequest, state: this.state };
    return { ok: true, ticket: { subjects, tokens }, state: this.state };
  }

  /** An admitted ticket is a new one holding the tokens taken so far, as the real buckets' is. */
  admitTokens(ticket: RateTicket, tokens: number): Admission {
    this.calls.push({ op: "admitTokens", ticket, tokens });
    if (this.refuseTokens) return { ...this.refuseTokens, state: this.state };
    return {
      ok: true,
      ticket: { subjects: ticket.subjects, tokens: ticket.tokens + tokens },
      state: this.state,
    };
  }

  settle(ticket: RateTicket, tokens: number): void {
    this.calls.push({ op: "settle", ticket, tokens });
  }

  /** the settles, in order: one per ticket given back */
  settles(): Extract<RateCall, { op: "settle" }>[] {
    return this.calls.filter((c) => c.op === "settle");
  }

  peek(): RateState {
    return this.state;
  }
  windows(): RateState {
    return this.state;
  }
  drainChanged(): RateSubject[] {
    return [];
  }
}
