// The quota ledger's contract. Implementations: in-process (memory-ledger.ts) today; a Redis
// one with Lua scripts plugs in here when several instances share the counters.

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
}

export interface Reservation {
  readonly id: number;
  readonly accountId: string;
  readonly keyId: string;
  /** tokens held */
  readonly tokens: number;
}

export type ReserveResult =
  | { ok: true; reservation: Reservation }
  | { ok: false; reason: "quota" | "key_limit"; remaining: number };

export interface Counter {
  used: number;
  reserved: number;
}

export interface Ledger {
  /**
   * Atomically holds between `minimum` and `wanted` tokens against both the account and
   * the key: as many as both can cover, never more than `wanted`. Refuses when even
   * `minimum` does not fit, naming the tighter of the two limits.
   */
  reserve(subject: LedgerSubject, wanted: number, minimum: number): Promise<ReserveResult>;
  /** Turns the reservation into a charge of `tokens`; the rest is released. Exactly once. */
  settle(reservation: Reservation, tokens: number): Promise<void>;
  /** Gives the whole reservation back (nothing was charged). Exactly once. */
  release(reservation: Reservation): Promise<void>;
  account(accountId: string): Counter | undefined;
  key(keyId: string): Counter | undefined;
  /** reservations not yet settled or released */
  openReservations(): number;
}
