// In-process ledger. JavaScript runs one callback at a time, so a check-and-hold without an
// await in between is atomic; that is all "atomic reserve" needs inside one process.
// A request that does not fit only because calls in flight hold tokens waits for them, in
// arrival order per account and key, instead of being refused.
// A capped agent session has a book of its own, made the first time a call of it is held:
// from what its records say it used (`sessionUse`), then kept here as the key's is. Books of
// sessions long idle are dropped when there are many, and made again from the records.
import { monthOf } from "../prices/period.ts";
import { addSpent, budgetLeft, chargeable, nanosFor, tokensFor } from "./money.ts";
import type {
  CostRule,
  Counter,
  Ledger,
  LedgerSubject,
  RefusalReason,
  Reservation,
  ReserveOptions,
  ReserveResult,
  SessionCounter,
  Spent,
} from "./types.ts";

/** What a session used before this process met it: its records' tokens and nanodollars. */
export type SessionUse = (
  accountId: string,
  keyId: string,
  sessionId: string,
) => Promise<{ tokens: number; nanos: number }>;

/** Session books kept before idle ones are dropped, and how long one must be idle to go. */
const SESSION_BOOKS = 10_000;
// far beyond the records' commit behind the answers (20 ms, retried for seconds): the records
// a dropped book is made again from hold everything it had counted
const SESSION_IDLE_MS = 10 * 60_000;

interface Waiter {
  subject: LedgerSubject;
  wanted: number;
  minimum: number;
  cost: CostRule | undefined;
  done(result: ReserveResult): void;
}

/** An account's or key's figures in this process: tokens, and money in nanodollars. */
interface Book {
  used: number;
  reserved: number;
  spent: Spent;
  reservedNanos: number;
}

interface SessionBook extends Book {
  /** when a hold of it last opened or closed */
  touched: number;
}

/** What one limit leaves, in tokens, and why. */
interface Room {
  tokens: number;
  reason: RefusalReason;
  /** what is left in the limit's own unit (tokens, or nanodollars for a budget) */
  left: number;
}

export class MemoryLedger implements Ledger {
  readonly #accounts = new Map<string, Book>();
  readonly #keys = new Map<string, Book>();
  /** by sessionKey() */
  readonly #sessions = new Map<string, SessionBook>();
  readonly #meeting = new Map<string, Promise<void>>();
  readonly #sessionUse: SessionUse;
  #sweptSessions = 0;
  readonly #open = new Map<number, Reservation>();
  readonly #waitMs: number;
  /** in arrival order */
  #waiters: Waiter[] = [];
  #nextId = 1;

  readonly #now: () => number;

  /**
   * `waitMs`: how long a request waits for tokens held by calls in flight (0: refuse at once);
   * `now`: the clock budget periods are read with; `sessionUse`: what a capped session used
   * before (none: nothing)
   */
  constructor(options: { waitMs?: number; now?: () => number; sessionUse?: SessionUse } = {}) {
    this.#waitMs = options.waitMs ?? 0;
    this.#now = options.now ?? Date.now;
    this.#sessionUse = options.sessionUse ?? (async () => ({ tokens: 0, nanos: 0 }));
  }

  reserve(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    options: ReserveOptions = {},
  ): Promise<ReserveResult> {
    // A session met for the first time is read first; from then on a hold is one synchronous step.
    if (subject.session && !this.#sessions.has(sessionKey(subject.keyId, subject.session.id)))
      return this.#meet(subject).then(() => this.reserve(subject, wanted, minimum, options));
    const cost = options.cost;
    const refused = this.#refusal(subject, minimum, cost, false);
    if (refused) return Promise.resolve(refused);
    // First come, first served: nobody passes a request already waiting on its account or key.
    if (!this.#waiters.some((w) => sharesLimit(w.subject, subject))) {
      const reservation = this.#hold(subject, wanted, minimum, cost);
      if (reservation) return Promise.resolve({ ok: true, reservation });
    }
    if (this.#waitMs <= 0 || options.signal?.aborted)
      return Promise.resolve(this.#refusal(subject, minimum, cost, true)!);
    return new Promise<ReserveResult>((resolve) => {
      const signal = options.signal;
      const stop = () => this.#giveUp(waiter);
      const timer = setTimeout(stop, this.#waitMs);
      const waiter: Waiter = {
        subject,
        wanted,
        minimum,
        cost,
        done: (result) => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", stop);
          resolve(result);
        },
      };
      signal?.addEventListener("abort", stop, { once: true });
      this.#waiters.push(waiter);
    });
  }

  #meet(subject: LedgerSubject): Promise<void> {
    const id = subject.session!.id;
    const k = sessionKey(subject.keyId, id);
    let meeting = this.#meeting.get(k);
    if (!meeting) {
      meeting = this.#sessionUse(subject.accountId, subject.keyId, id)
        .then((use) => {
          if (this.#sessions.has(k)) return;
          this.#dropIdleSessions();
          const spent = { total: use.nanos, month: 0, monthKey: "" };
          this.#sessions.set(k, {
            used: use.tokens,
            reserved: 0,
            spent,
            reservedNanos: 0,
            touched: Date.now(),
          });
        })
        .finally(() => this.#meeting.delete(k));
      this.#meeting.set(k, meeting);
    }
    return meeting;
  }

  /** Past SESSION_BOOKS, drops the books of sessions idle for long that nothing holds or waits on. */
  #dropIdleSessions(): void {
    const now = Date.now();
    if (this.#sessions.size < SESSION_BOOKS || now - this.#sweptSessions < 1_000) return;
    this.#sweptSessions = now;
    const waiting = new Set(
      this.#waiters.flatMap((w) =>
        w.subject.session ? [sessionKey(w.subject.keyId, w.subject.session.id)] : [],
      ),
    );
    for (const [k, b] of this.#sessions)
      if (!b.reserved && !b.reservedNanos && now - b.touched > SESSION_IDLE_MS && !waiting.has(k))
        this.#sessions.delete(k);
  }

  /**
   * What each limit leaves for this request, in tokens: by consumption alone, or (`held`)
   * with what calls in flight hold too. A budget's room is the tokens its money pays for.
   */
  #rooms(subject: LedgerSubject, cost: CostRule | undefined, held: boolean): Room[] {
    const account = this.#book(this.#accounts, subject.accountId, subject.accountUsed, subject.accountSpent);
    const key = this.#book(this.#keys, subject.keyId, subject.keyUsed, subject.keySpent);
    const now = this.#now();
    const rooms: Room[] = [];
    const tokens = (reason: RefusalReason, limit: number, book: Book) => {
      const left = limit - book.used;
      rooms.push({ tokens: left - (held ? book.reserved : 0), reason, left });
    };
    tokens("quota", subject.accountQuota, account);
    if (subject.keyLimit !== null) tokens("key_limit", subject.keyLimit, key);
    if (cost) {
      const money = (reason: RefusalReason, budget: LedgerSubject["keyBudget"], book: Book) => {
        if (!budget) return;
        const left = budgetLeft(budget, book.spent, now);
        rooms.push({ tokens: tokensFor(cost, left - (held ? book.reservedNanos : 0)), reason, left });
      };
      money("account_budget", subject.accountBudget, account);
      money("key_budget", subject.keyBudget, key);
    }
    const session = subject.session;
    if (session) {
      const book = this.#sessions.get(sessionKey(subject.keyId, session.id))!;
      if (session.limitTokens !== null) tokens("session_limit", session.limitTokens, book);
      if (cost && session.budgetNanos !== null) {
        const left = session.budgetNanos - book.spent.total;
        rooms.push({
          tokens: tokensFor(cost, left - (held ? book.reservedNanos : 0)),
          reason: "session_budget",
          left,
        });
      }
    }
    return rooms;
  }

  /**
   * The refusal when the request cannot be held now: by consumption alone, or (`held`) by
   * what calls in flight hold too. Undefined when consumption leaves room and `held` is false.
   */
  #refusal(
    subject: LedgerSubject,
    minimum: number,
    cost: CostRule | undefined,
    held: boolean,
  ): ReserveResult | undefined {
    const rooms = this.#rooms(subject, cost, false);
    const tightest = rooms.reduce((a, b) => (b.tokens < a.tokens ? b : a));
    if (tightest.tokens >= minimum && !held) return undefined;
    return {
      ok: false,
      reason: tightest.reason,
      remaining: Math.max(0, tightest.left),
      held: tightest.tokens >= minimum,
    };
  }

  #hold(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    cost: CostRule | undefined,
  ): Reservation | undefined {
    const rooms = this.#rooms(subject, cost, true);
    const room = Math.min(...rooms.map((r) => r.tokens));
    if (room < minimum) return undefined;
    const tokens = Math.min(wanted, room);
    const sessionBudget = subject.session !== undefined && subject.session.budgetNanos !== null;
    const budgeted = cost && (subject.accountBudget || subject.keyBudget || sessionBudget);
    const nanos = budgeted ? nanosFor(cost, tokens) : null;
    const account = this.#accounts.get(subject.accountId)!;
    const key = this.#keys.get(subject.keyId)!;
    account.reserved += tokens;
    key.reserved += tokens;
    if (nanos !== null) {
      if (subject.accountBudget) account.reservedNanos += nanos;
      if (subject.keyBudget) key.reservedNanos += nanos;
    }
    if (subject.session) {
      const book = this.#sessions.get(sessionKey(subject.keyId, subject.session.id))!;
      book.reserved += tokens;
      if (nanos !== null && sessionBudget) book.reservedNanos += nanos;
      book.touched = Date.now();
    }
    const reservation: Reservation = {
      id: this.#nextId++,
      accountId: subject.accountId,
      keyId: subject.keyId,
      tokens,
      nanos,
      ...(nanos !== null
        ? {
            holdsNanos: {
              account: !!subject.accountBudget,
              key: !!subject.keyBudget,
              ...(subject.session ? { session: sessionBudget } : {}),
            },
          }
        : {}),
      ...(subject.session ? { session: subject.session.id } : {}),
    };
    this.#open.set(reservation.id, reservation);
    return reservation;
  }

  #giveUp(waiter: Waiter): void {
    const i = this.#waiters.indexOf(waiter);
    if (i < 0) return;
    this.#waiters.splice(i, 1);
    waiter.done(this.#refusal(waiter.subject, waiter.minimum, waiter.cost, true)!);
    // the head leaving may let the next ones in
    this.#wake();
  }

  /** Lets in, in arrival order, every waiter that fits now and has nobody before it on its limits. */
  #wake(): void {
    if (!this.#waiters.length) return;
    const blocked: LedgerSubject[] = [];
    const still: Waiter[] = [];
    for (const w of this.#waiters) {
      if (blocked.some((b) => sharesLimit(b, w.subject))) {
        still.push(w);
        continue;
      }
      const refused = this.#refusal(w.subject, w.minimum, w.cost, false);
      if (refused) {
        w.done(refused); // what was charged meanwhile leaves no room: no point waiting
        continue;
      }
      const reservation = this.#hold(w.subject, w.wanted, w.minimum, w.cost);
      if (reservation) w.done({ ok: true, reservation });
      else {
        blocked.push(w.subject);
        still.push(w);
      }
    }
    this.#waiters = still;
  }

  settle(reservation: Reservation, tokens: number, nanos: number): Promise<void> {
    this.#close(reservation, Math.max(0, Math.round(tokens)), chargeable(reservation, nanos));
    return Promise.resolve();
  }

  release(reservation: Reservation): Promise<void> {
    this.#close(reservation, 0, 0);
    return Promise.resolve();
  }

  #close(reservation: Reservation, charge: number, nanos: number): void {
    // Exactly once: a second settle or release of the same reservation changes nothing.
    if (!this.#open.delete(reservation.id)) return;
    const month = monthOf(this.#now());
    const session =
      reservation.session === undefined
        ? undefined
        : this.#sessions.get(sessionKey(reservation.keyId, reservation.session));
    if (session) session.touched = Date.now();
    const books: [Book | undefined, boolean][] = [
      [this.#accounts.get(reservation.accountId), reservation.holdsNanos?.account ?? false],
      [this.#keys.get(reservation.keyId), reservation.holdsNanos?.key ?? false],
      [session, reservation.holdsNanos?.session ?? false],
    ];
    for (const [book, heldNanos] of books) {
      if (!book) continue;
      book.reserved -= reservation.tokens;
      book.used += charge;
      if (heldNanos) book.reservedNanos -= reservation.nanos!;
      addSpent(book.spent, nanos, month);
    }
    this.#wake();
  }

  account(accountId: string): Counter | undefined {
    const b = this.#accounts.get(accountId);
    return b && { used: b.used, reserved: b.reserved };
  }

  key(keyId: string): Counter | undefined {
    const b = this.#keys.get(keyId);
    return b && { used: b.used, reserved: b.reserved };
  }

  money(kind: "account" | "key", id: string): Counter | undefined {
    const b = (kind === "key" ? this.#keys : this.#accounts).get(id);
    return b && { used: b.spent.total, reserved: b.reservedNanos };
  }

  #book(map: Map<string, Book>, id: string, storedUsed: number, storedSpent: Spent): Book {
    let b = map.get(id);
    if (!b) {
      b = { used: storedUsed, reserved: 0, spent: { ...storedSpent }, reservedNanos: 0 };
      map.set(id, b);
    }
    return b;
  }

  openReservations(): number {
    return this.#open.size;
  }

  inspectSession(keyId: string, sessionId: string): Promise<SessionCounter | undefined> {
    const b = this.#sessions.get(sessionKey(keyId, sessionId));
    return Promise.resolve(
      b && { used: b.used, reserved: b.reserved, spentNanos: b.spent.total, reservedNanos: b.reservedNanos },
    );
  }
}

/** A session's book is its key's: two keys' sessions of one id are two sessions. */
function sessionKey(keyId: string, sessionId: string): string {
  return `${keyId} ${sessionId}`;
}

/** Whether two requests draw on the same account quota or key limit. */
function sharesLimit(a: LedgerSubject, b: LedgerSubject): boolean {
  return a.accountId === b.accountId || a.keyId === b.keyId;
}
