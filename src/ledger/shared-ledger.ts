// What the ledgers shared by several instances have in common: a hold is an attempt against
// shared state (PostgreSQL or Redis) that answers ok, refused, held or wait; a request told to
// wait keeps its place in a queue kept beside that state (first come, first served across all
// instances) and tries again when a hold on its account or key is closed anywhere (a
// notification), or at the latest every POLL_MS. Only the first local waiter of each account
// and key tries: the ones behind it cannot pass it. This process also keeps a view of what it
// holds, for the live figures and the auth hook's early refusal.
// Money goes the same way as tokens: an attempt carries the call's cost rule and the current
// month of this process's clock, and a hold answers with the nanodollars it holds.
import { GatewayError } from "../errors/index.ts";
import { monthOf } from "../prices/period.ts";
import { chargeable } from "./money.ts";
import type {
  CostRule,
  Counter,
  Ledger,
  LedgerSubject,
  RefusalReason,
  Reservation,
  ReserveOptions,
  ReserveResult,
} from "./types.ts";

/** a waiter also tries this often, for notifications lost with a connection */
const POLL_MS = 200;

export type AttemptStatus = "ok" | "refused" | "held" | "wait";

export interface Attempt {
  status: AttemptStatus;
  /** ok: tokens held */
  tokens: number;
  /** what consumption leaves of the tightest limit: tokens, or nanodollars for a budget */
  remaining: number;
  reason: RefusalReason;
  /** ok: the hold's id */
  reservationId?: number;
  /** ok: the hold is journaled in the store behind its call (Reservation.landed) */
  landed?: () => Promise<boolean>;
  /** ok: nanodollars held (null: no budget applies), and against each budget (0: none) */
  nanos?: number | null;
  accountNanos?: number;
  keyNanos?: number;
  /** ok: nanodollars held against the session's budget (0: none) */
  sessionNanos?: number;
  /** wait: the place in the queue, to pass to the next attempt */
  waiterId?: number;
  /** the consumption and spending (nanodollars, in total) the shared state knows, for this process's view */
  keyUsed?: number;
  accountUsed?: number;
  keySpent?: number;
  accountSpent?: number;
}

/** A hold closing: charged `charge` and `nanos` with its record (`recorded`), or released. */
export interface Closing {
  reservation: Reservation;
  charge: number;
  nanos: number;
  recorded: boolean;
}

interface LocalWaiter {
  subject: LedgerSubject;
  wanted: number;
  minimum: number;
  cost: CostRule | undefined;
  waiterId: number | undefined;
  deadline: number;
  last: Attempt;
  done(result: ReserveResult): void;
}

export abstract class SharedLedger implements Ledger {
  readonly #waitMs: number;
  readonly #open = new Map<number, Reservation>();
  /** holds whose close the record writer committed in the store, with the record */
  readonly #closedInStore = new Set<number>();
  /**
   * holds whose record is journaled, not committed yet, with the charge their call ended with
   * (null: it has not ended yet): they close when the record is committed
   */
  readonly #journaled = new Map<number, { charge: number; nanos: number } | null>();
  /** closes under way of holds whose records were committed behind their answers */
  readonly #closing = new Set<Promise<void>>();
  readonly #used = new Map<string, number>();
  readonly #reserved = new Map<string, number>();
  readonly #spent = new Map<string, number>();
  readonly #reservedNanos = new Map<string, number>();
  readonly #now: () => number;
  #waiters: LocalWaiter[] = [];
  #pumping: Promise<void> | undefined;
  #again = false;
  #poll: NodeJS.Timeout | undefined;

  /** `now`: the clock budget periods are read with (the month a hold and a charge count in) */
  constructor(options: { waitMs: number; now?: (() => number) | undefined }) {
    this.#waitMs = options.waitMs;
    this.#now = options.now ?? Date.now;
  }

  /** "YYYY-MM" (UTC) of this process's clock: the month monthly budgets count now. */
  protected month(): string {
    return monthOf(this.#now());
  }

  /**
   * One try against the shared state; `waitMs` 0: answer held rather than wait. `cost`: what
   * the tokens held cost at most (undefined: nothing; budgets do not limit the call).
   */
  protected abstract attempt(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    cost: CostRule | undefined,
    waiterId: number | undefined,
    waitMs: number,
  ): Promise<Attempt>;
  /** Leaves the queue (gave up waiting). */
  protected abstract unwait(waiterId: number, subject: LedgerSubject): Promise<void>;
  /**
   * Closes a hold in the shared state with a charge of tokens and nanodollars (its record
   * committed) or none.
   */
  protected abstract close(
    reservation: Reservation,
    charge: number,
    nanos: number,
    recorded: boolean,
  ): Promise<void>;

  /** Closes the holds of a records commit: one by one, unless the shared state takes them at once. */
  protected async closeMany(closing: readonly Closing[]): Promise<void> {
    await Promise.all(closing.map((c) => this.close(c.reservation, c.charge, c.nanos, c.recorded)));
  }

  async reserve(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    options: ReserveOptions = {},
  ): Promise<ReserveResult> {
    const cost = options.cost;
    const first = await this.#try(subject, wanted, minimum, cost, undefined, this.#waitMs);
    const result = this.#result(subject, first);
    if (result) return result;
    const signal = options.signal;
    return new Promise<ReserveResult>((resolve) => {
      const giveUp = () => this.#giveUp(waiter);
      const timer = setTimeout(giveUp, this.#waitMs);
      const waiter: LocalWaiter = {
        subject,
        wanted,
        minimum,
        cost,
        waiterId: first.waiterId,
        deadline: Date.now() + this.#waitMs,
        last: first,
        done: (r) => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", giveUp);
          resolve(r);
        },
      };
      // In the shared queue's order: the first local waiter of an account or key is the one
      // that can pass (answers arrive out of order over several connections).
      const at = this.#waiters.findIndex((w) => (w.waiterId ?? Infinity) > (waiter.waiterId ?? Infinity));
      this.#waiters.splice(at < 0 ? this.#waiters.length : at, 0, waiter);
      signal?.addEventListener("abort", giveUp, { once: true });
      if (signal?.aborted) giveUp();
      this.#poll ??= setInterval(() => this.wake(), POLL_MS);
    });
  }

  async #try(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    cost: CostRule | undefined,
    waiterId: number | undefined,
    waitMs: number,
  ): Promise<Attempt> {
    let a: Attempt;
    try {
      a = await this.attempt(subject, wanted, minimum, cost, waiterId, waitMs);
    } catch (err) {
      throw new GatewayError("ledger_unavailable", { cause: err });
    }
    if (a.keyUsed !== undefined) this.#used.set(`k:${subject.keyId}`, a.keyUsed);
    if (a.accountUsed !== undefined) this.#used.set(`a:${subject.accountId}`, a.accountUsed);
    if (a.keySpent !== undefined) this.#spent.set(`k:${subject.keyId}`, a.keySpent);
    if (a.accountSpent !== undefined) this.#spent.set(`a:${subject.accountId}`, a.accountSpent);
    return a;
  }

  /** The reservation an ok attempt made. */
  #reservation(subject: LedgerSubject, a: Attempt): Reservation {
    const nanos = a.nanos ?? null;
    const session = subject.session;
    return {
      id: a.reservationId!,
      accountId: subject.accountId,
      keyId: subject.keyId,
      tokens: a.tokens,
      nanos,
      ...(nanos !== null
        ? {
            holdsNanos: {
              account: (a.accountNanos ?? 0) > 0,
              key: (a.keyNanos ?? 0) > 0,
              ...(session ? { session: (a.sessionNanos ?? 0) > 0 } : {}),
            },
          }
        : {}),
      ...(session ? { session: session.id } : {}),
      ...(a.landed ? { landed: a.landed } : {}),
    };
  }

  /** The answer of an attempt, or undefined when it must wait. */
  #result(subject: LedgerSubject, a: Attempt): ReserveResult | undefined {
    switch (a.status) {
      case "ok": {
        const reservation = this.#reservation(subject, a);
        this.#open.set(reservation.id, reservation);
        this.#addReserved(reservation, 1);
        return { ok: true, reservation };
      }
      case "refused":
        return { ok: false, reason: a.reason, remaining: Math.max(0, a.remaining), held: false };
      case "held":
        return { ok: false, reason: a.reason, remaining: Math.max(0, a.remaining), held: true };
      case "wait":
        return undefined;
    }
  }

  #giveUp(waiter: LocalWaiter): void {
    const i = this.#waiters.indexOf(waiter);
    if (i < 0) return;
    this.#waiters.splice(i, 1);
    this.#idle();
    const { reason, remaining } = waiter.last;
    waiter.done({ ok: false, reason, remaining: Math.max(0, remaining), held: true });
    // the next in line may come first now, here or on another instance
    if (waiter.waiterId !== undefined)
      void this.unwait(waiter.waiterId, waiter.subject).catch(() => undefined);
  }

  /** A hold on this account or key was closed somewhere, or it is time to poll: the first waiters try. */
  wake(accountId?: string, keyId?: string): void {
    if (!this.#waiters.length) return;
    if (
      accountId !== undefined &&
      !this.#waiters.some((w) => w.subject.accountId === accountId || w.subject.keyId === keyId)
    )
      return;
    if (this.#pumping) {
      this.#again = true;
      return;
    }
    this.#pumping = this.#pump().finally(() => {
      this.#pumping = undefined;
    });
  }

  async #pump(): Promise<void> {
    do {
      this.#again = false;
      const blocked: LedgerSubject[] = [];
      for (const w of [...this.#waiters]) {
        if (!this.#waiters.includes(w)) continue;
        if (blocked.some((b) => b.accountId === w.subject.accountId || b.keyId === w.subject.keyId)) continue;
        let a: Attempt;
        try {
          a = await this.#try(
            w.subject,
            w.wanted,
            w.minimum,
            w.cost,
            w.waiterId,
            Math.max(1, w.deadline - Date.now()),
          );
        } catch {
          blocked.push(w.subject); // the shared state is unreachable: its own timeout refuses it
          continue;
        }
        if (!this.#waiters.includes(w)) {
          // It gave up while this attempt ran: a hold made for nobody goes back.
          if (a.status === "ok")
            await this.close(this.#reservation(w.subject, a), 0, 0, false).catch(() => undefined);
          continue;
        }
        w.last = a;
        w.waiterId = a.waiterId ?? w.waiterId;
        const result = this.#result(w.subject, a);
        if (!result) {
          blocked.push(w.subject);
          continue;
        }
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.done(result);
      }
      this.#idle();
    } while (this.#again);
  }

  #idle(): void {
    if (this.#waiters.length || !this.#poll) return;
    clearInterval(this.#poll);
    this.#poll = undefined;
  }

  /** The record writer committed the close of these holds with their records (see StoreHolds). */
  closedInStore(reservations: readonly Reservation[]): void {
    const ending: Closing[] = [];
    for (const r of reservations) {
      if (!this.#open.has(r.id)) continue;
      this.#closedInStore.add(r.id);
      const ended = this.#journaled.get(r.id);
      if (!ended) continue;
      // the call ended before its record was committed: its hold closes now, with the others
      const c = this.#ending(r, ended.charge, ended.nanos);
      if (c) ending.push(c);
    }
    if (!ending.length) return;
    const closing = this.closeMany(ending)
      .catch(() => undefined)
      .finally(() => {
        this.#closing.delete(closing);
        const subjects = new Map(ending.map(({ reservation: r }) => [`${r.accountId} ${r.keyId}`, r]));
        for (const r of subjects.values()) this.wake(r.accountId, r.keyId);
      });
    this.#closing.add(closing);
  }

  /** The hold's record is journaled: the call's end waits for its commit to close it (see StoreHolds). */
  journaled(reservation: Reservation): void {
    if (this.#open.has(reservation.id)) this.#journaled.set(reservation.id, null);
  }

  /** Waits for the closes of holds whose records were committed behind their answers (see StoreHolds). */
  async closesDone(): Promise<void> {
    while (this.#closing.size) await Promise.all([...this.#closing]);
  }

  async settle(reservation: Reservation, tokens: number, nanos: number): Promise<void> {
    await this.#finish(reservation, Math.max(0, Math.round(tokens)), chargeable(reservation, nanos));
  }

  async release(reservation: Reservation): Promise<void> {
    await this.#finish(reservation, 0, 0);
  }

  async #finish(reservation: Reservation, charge: number, nanos: number): Promise<void> {
    const c = this.#ending(reservation, charge, nanos);
    if (!c) return;
    try {
      await this.close(c.reservation, c.charge, c.nanos, c.recorded);
    } finally {
      this.wake(reservation.accountId, reservation.keyId);
    }
  }

  /** The close a call's end makes, in this process's books; undefined when none is due yet. */
  #ending(reservation: Reservation, charge: number, nanos: number): Closing | undefined {
    if (!this.#open.has(reservation.id)) return undefined;
    if (this.#journaled.has(reservation.id) && !this.#closedInStore.has(reservation.id)) {
      // Its record is not committed yet: the hold keeps what it held until it is, then
      // closes with this charge (closedInStore). A second end changes nothing.
      if (this.#journaled.get(reservation.id) === null)
        this.#journaled.set(reservation.id, { charge, nanos });
      return undefined;
    }
    this.#journaled.delete(reservation.id);
    // Exactly once: a second settle or release of the same reservation changes nothing.
    if (!this.#open.delete(reservation.id)) return undefined;
    // A charge is only ever made with its record: without one, the hold is released. The
    // view's consumption is left to the next attempt to learn: adding the charge here could
    // count it twice (an attempt may have read it already), and a view that runs high would
    // refuse keys early; one that runs low only lets the attempt decide.
    const recorded = this.#closedInStore.delete(reservation.id);
    this.#addReserved(reservation, -1);
    return { reservation, charge: recorded ? charge : 0, nanos: recorded ? nanos : 0, recorded };
  }

  #addReserved(r: Reservation, sign: 1 | -1): void {
    const add = (map: Map<string, number>, id: string, n: number) => {
      const now = (map.get(id) ?? 0) + sign * n;
      if (now) map.set(id, now);
      else map.delete(id);
    };
    for (const id of [`k:${r.keyId}`, `a:${r.accountId}`]) add(this.#reserved, id, r.tokens);
    if (r.holdsNanos?.key) add(this.#reservedNanos, `k:${r.keyId}`, r.nanos!);
    if (r.holdsNanos?.account) add(this.#reservedNanos, `a:${r.accountId}`, r.nanos!);
  }

  account(accountId: string): Counter | undefined {
    return this.#view(`a:${accountId}`);
  }

  key(keyId: string): Counter | undefined {
    return this.#view(`k:${keyId}`);
  }

  /** consumption as last seen in the shared state, and what this process holds */
  #view(id: string, used: Map<string, number> = this.#used, held = this.#reserved): Counter | undefined {
    const seen = used.get(id);
    const reserved = held.get(id) ?? 0;
    if (seen === undefined && !reserved) return undefined;
    return { used: seen ?? 0, reserved };
  }

  /** spending (in total) as last seen in the shared state, and the nanodollars this process holds */
  money(kind: "account" | "key", id: string): Counter | undefined {
    return this.#view(`${kind[0]}:${id}`, this.#spent, this.#reservedNanos);
  }

  openReservations(): number {
    return this.#open.size;
  }

  /** Refuses whoever still waits (shutdown). */
  protected stopWaiting(): void {
    for (const w of [...this.#waiters]) this.#giveUp(w);
    this.#idle();
  }
}
