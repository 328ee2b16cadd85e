// In-process ledger. JavaScript runs one callback at a time, so a check-and-hold without an
// await in between is atomic; that is all "atomic reserve" needs inside one process.
import type { Counter, Ledger, LedgerSubject, Reservation, ReserveResult } from "./types.ts";

export class MemoryLedger implements Ledger {
  readonly #accounts = new Map<string, Counter>();
  readonly #keys = new Map<string, Counter>();
  readonly #open = new Map<number, Reservation>();
  #nextId = 1;

  reserve(subject: LedgerSubject, wanted: number, minimum: number): Promise<ReserveResult> {
    const account = counter(this.#accounts, subject.accountId, subject.accountUsed);
    const key = counter(this.#keys, subject.keyId, subject.keyUsed);
    const accountRoom = subject.accountQuota - account.used - account.reserved;
    const keyRoom = subject.keyLimit === null ? Infinity : subject.keyLimit - key.used - key.reserved;
    const room = Math.min(accountRoom, keyRoom);
    if (room < minimum) {
      const reason = keyRoom < accountRoom ? "key_limit" : "quota";
      return Promise.resolve({ ok: false, reason, remaining: Math.max(0, room) });
    }
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
    return Promise.resolve({ ok: true, reservation });
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

function counter(map: Map<string, Counter>, id: string, storedUsed: number): Counter {
  let c = map.get(id);
  if (!c) {
    c = { used: storedUsed, reserved: 0 };
    map.set(id, c);
  }
  return c;
}
