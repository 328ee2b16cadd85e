// How a shared ledger closes holds in the store, with the record writer's batch: the records,
// their charges and the end of their holds commit together (one statement on PostgreSQL, the
// migration 024's gateway_commit_calls), so a crash between them cannot charge twice or leave a
// hold that the charge already replaced. Shared ledgers run on PostgreSQL only.
import type { Reservation } from "./types.ts";

/** A hold whose record is being committed, with what the record charges. */
export interface RecordedHold {
  reservation: Reservation;
  tokens: number;
  nanos: number;
}

/**
 * What the batch does with its holds: `postgres`, the ledger's own rows end and the counters
 * are charged with them; `redis`, the holds' journal rows of `instance` end, their charges are
 * kept until they close in Redis, and the charge rows of the holds in `done` (closed in Redis
 * since) go.
 */
export type HoldClosing =
  | { ledger: "postgres" }
  | { ledger: "redis"; instance: string; done: readonly number[] };

export interface StoreHolds {
  /** Called once per commit attempt: how that attempt ends the batch's holds. */
  closing(): HoldClosing;
  /** The batch committed: these holds' settle or release must not close them again. */
  committed(reservations: readonly Reservation[]): void;
  /**
   * The hold's record is journaled, to be committed behind the answer: its settle or release
   * (the call's end) only notes the charge, and the hold closes with it once the record is
   * committed (`committed`). Until then it keeps holding what it held.
   */
  journaled(reservation: Reservation): void;
  /** Resolves once the holds of the records committed so far have closed (the writer's flush). */
  closesDone(): Promise<void>;
  /**
   * Records a sweep commits before it releases a dead instance's holds: what that instance
   * journaled and no commit took out (the record writer's commitLeft).
   */
  commitLeftWith?(commit: (instance: string) => Promise<unknown>): void;
}
