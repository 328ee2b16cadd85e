// The quota ledger's contract. Implementations: in-process (memory-ledger.ts), the default
// of one process on SQLite; on PostgreSQL (postgres-ledger.ts), shared by every instance.

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
  | {
      ok: false;
      reason: "quota" | "key_limit";
      /** what consumption leaves of the tighter limit, whatever calls in flight hold */
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

export interface ReserveOptions {
  /** stops waiting (the client left); the result is then a refusal with `held: true` */
  signal?: AbortSignal | undefined;
}

export interface Ledger {
  /**
   * Atomically holds between `minimum` and `wanted` tokens against both the account and
   * the key: as many as both can cover, never more than `wanted`. Refuses at once when
   * consumption alone leaves less than `minimum`, naming the tighter of the two limits. When
   * only tokens held by calls in flight are in the way, waits for them (first come, first
   * served, up to the ledger's wait) instead of refusing.
   */
  reserve(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    options?: ReserveOptions,
  ): Promise<ReserveResult>;
  /** Turns the reservation into a charge of `tokens`; the rest is released. Exactly once. */
  settle(reservation: Reservation, tokens: number): Promise<void>;
  /** Gives the whole reservation back (nothing was charged). Exactly once. */
  release(reservation: Reservation): Promise<void>;
  /** this process's view of an account (undefined: not met yet) */
  account(accountId: string): Counter | undefined;
  key(keyId: string): Counter | undefined;
  /** reservations of this process not yet settled or released */
  openReservations(): number;
  /**
   * Shared ledgers: what the shared state (the store, Redis) holds for an account or key, and
   * how many holds of any instance are open; for the invariant checks and operators' tools.
   */
  inspect?(kind: "account" | "key", id: string): Promise<Counter | undefined>;
  openHolds?(): Promise<number>;
}
