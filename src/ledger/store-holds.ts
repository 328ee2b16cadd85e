// How a shared ledger closes holds in the store, in the record writer's transaction: the
// records, their charges and the end of their holds commit together, so a crash between them
// cannot charge twice or leave a hold that the charge already replaced.
import type { Kysely } from "kysely";
import type { Database } from "../store/schema.ts";
import type { Reservation } from "./types.ts";

/** A hold whose record is being committed, with what the record charges. */
export interface RecordedHold {
  reservation: Reservation;
  tokens: number;
  nanos: number;
}

export interface StoreHolds {
  /**
   * In the writer's transaction: ends these holds in the store and adds the charges to the
   * keys' and accounts' counters, itself or by calling `charge` (the writer's own updates).
   */
  closeWithRecords(
    trx: Kysely<Database>,
    holds: readonly RecordedHold[],
    charges: { keys: ReadonlyMap<string, number>; accounts: ReadonlyMap<string, number> },
    charge: () => Promise<void>,
  ): Promise<void>;
  /** The transaction committed: these holds' settle or release must not close them again. */
  committed(reservations: readonly Reservation[]): void;
}
