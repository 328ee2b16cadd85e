// In-process ledger. JavaScript runs one callback at a time, so a check-and-hold without an
// await in between is atomic; that is all "atomic reserve" needs inside one process.
// A request that does not fit only because calls in flight hold tokens waits for them, in
// arrival order per account and key, instead of being refused.
import type { Counter, Ledger, LedgerSubject, Reservation, ReserveOptions, ReserveResult } from "./types.ts";

interface Waiter {
  subject: LedgerSubject;
  wanted: number;
  minimum: number;
  done(result: ReserveResult): void;
}

export class MemoryLedger implements Ledger {
  readonly #accounts = new Map<string, Counter>();
  readonly #keys = new Map<string, Counter>();
  readonly #open = new Map<number, Reservation>();
  readonly #waitMs: number;
  /** in arrival order */
  #waiters: Waiter[] = [];
  #nextId = 1;

  /** `waitMs`: how long a request waits for tokens held by calls in flight (0: refuse at once) */
  constructor(options: { waitMs?: number } = {}) {
    this.#waitMs = options.waitMs ?? 0;
  }

  reserve(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    options: ReserveOptions = {},
  ): Promise<ReserveResult> {
    const refused = this.#refusal(subject, minimum, false);
    if (refused) return Promise.resolve(refused);
    // First come, first served: nobody passes a request already waiting on its account or key.
    if (!this.#waiters.some((w) => sharesLimit(w.subject, subject))) {
      const reservation = this.#hold(subject, wanted, minimum);
      if (reservation) return Promise.resolve({ ok: true, reservation });
    }
    if (this.#waitMs <= 0 || options.signal?.aborted)
      return Promise.resolve(this.#refusal(subject, minimum, true)!);
    return new Promise<ReserveResult>((resolve) => {
      const signal = options.signal;
      const stop = () => this.#giveUp(waiter);
      const timer = setTimeout(stop, this.#waitMs);
      const waiter: Waiter = {
        subject,
        wanted,
        minimum,
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

  /**
   * The refusal when the request cannot be held now: by consumption alone, or (`held`) by
   * what calls in flight hold too. Undefined when consumption leaves room and `held` is false.
   */
  #refusal(subject: LedgerSubject, minimum: number, held: boolean): ReserveResult | undefined {
    const account = counter(this.#accounts, subject.accountId, subject.accountUsed);
    const key = counter(this.#keys, subject.keyId, subject.keyUsed);
    const accountFree = subject.accountQuota - account.used;
    const keyFree = subject.keyLimit === null ? Infinity : subject.keyLimit - key.used;
    const free = Math.min(accountFree, keyFree);
    if (free >= minimum && !held) return undefined;
    const reason = keyFree < accountFree ? "key_limit" : "quota";
    return { ok: false, reason, remaining: Math.max(0, free), held: free >= minimum };
  }

  #hold(subject: LedgerSubject, wanted: number, minimum: number): Reservation | undefined {
    const account = counter(this.#accounts, subject.accountId, subject.accountUsed);
    const key = counter(this.#keys, subject.keyId, subject.keyUsed);
    const accountRoom = subject.accountQuota - account.used - account.reserved;
    const keyRoom = subject.keyLimit === null ? Infinity : subject.keyLimit - key.used - key.reserved;
    const room = Math.min(accountRoom, keyRoom);
    if (room < minimum) return undefined;
    const tokens = Math.min(wanted, room);
    account.reserved += tokens;
    key.reserved += tokens;
    const reservation: Reservation = {
      id: this.#nextId++,
      accountId: subject.accountId,
      keyId: subject.keyId,
      tokens,
    };
    this.#open.set(reservation.id, reservation);
    return reservation;
  }

  #giveUp(waiter: Waiter): void {
    const i = this.#waiters.indexOf(waiter);
    if (i < 0) return;
    this.#waiters.splice(i, 1);
    waiter.done(this.#refusal(waiter.subject, waiter.minimum, true)!);
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
      const refused = this.#refusal(w.subject, w.minimum, false);
      if (refused) {
        w.done(refused); // what was charged meanwhile leaves no room: no point waiting
        continue;
      }
      const reservation = this.#hold(w.subject, w.wanted, w.minimum);
      if (reservation) w.done({ ok: true, reservation });
      else {
        blocked.push(w.subject);
        still.push(w);
      }
    }
    this.#waiters = still;
  }

  settle(reservation: Reservation, tokens: number): Promise<void> {
    this.#close(reservation, Math.max(0, Math.round(tokens)));
    return Promise.resolve();
  }

  release(reservation: Reservation): Promise<void> {
    this.#close(reservation, 0);
    return Promise.resolve();
  }

  #close(reservation: Reservation, charge: number): void {
    // Exactly once: a second settle or release of the same reservation changes nothing.
    if (!this.#open.delete(reservation.id)) return;
    for (const c of [this.#accounts.get(reservation.accountId), this.#keys.get(reservation.keyId)]) {
      if (!c) continue;
      c.reserved -= reservation.tokens;
      c.used += charge;
    }
    this.#wake();
  }

  account(accountId: string): Counter | undefined {
    const c = this.#accounts.get(accountId);
    return c && { ...c };
  }

  key(keyId: string): Counter | undefined {
    const c = this.#keys.get(keyId);
    return c && { ...c };
  }

  openReservations(): number {
    return this.#open.size;
  }
}

/** Whether two requests draw on the same account quota or key limit. */
function sharesLimit(a: LedgerSubject, b: LedgerSubject): boolean {
  return a.accountId === b.accountId || a.keyId === b.keyId;
}

function counter(map: Map<string, Counter>, id: string, storedUsed: number): Counter {
  let c = map.get(id);
  if (!c) {
    c = { used: storedUsed, reserved: 0 };
    map.set(id, c);
  }
  return c;
}
