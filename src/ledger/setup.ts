// Which ledger and rate limits an instance runs: in process on SQLite (one process, the
// default and the fastest path), on PostgreSQL when instances share the store.
import type { Logger } from "pino";
import type { Config } from "../config/schema.ts";
import type { Store } from "../store/db.ts";
import { InstanceLease } from "./instances.ts";
import { MemoryLedger } from "./memory-ledger.ts";
import { PostgresLedger } from "./postgres-ledger.ts";
import { RateLimiter, type RateLimits } from "./rate-limiter.ts";
import type { StoreHolds } from "./store-holds.ts";
import type { Ledger } from "./types.ts";

export interface LedgerSetup {
  ledger: Ledger;
  rates: RateLimits;
  /** the holds the record writer ends with their records (shared ledgers) */
  holds: StoreHolds | undefined;
  /** before the first call: listens, takes the lease */
  start(): Promise<void>;
  /** after the last call: gives the lease up */
  stop(): Promise<void>;
}

export function ledgerSetup(config: Config, store: Store, logger: Logger, instanceId: string): LedgerSetup {
  const { wait_ms: waitMs, lease_ms: leaseMs } = config.ledger;
  const rates = new RateLimiter();
  if (store.dialect === "sqlite") {
    return {
      ledger: new MemoryLedger({ waitMs }),
      rates,
      holds: undefined,
      start: async () => {},
      stop: async () => {},
    };
  }
  const ledger = new PostgresLedger(store.db, {
    url: config.store.database_url!,
    instanceId,
    waitMs,
    leaseMs,
    logger,
  });
  const lease = new InstanceLease(store, {
    id: instanceId,
    redis: false,
    leaseMs,
    logger,
    sweep: () => ledger.sweep(),
  });
  return {
    ledger,
    rates,
    holds: ledger,
    async start() {
      await lease.start();
      await ledger.start();
    },
    async stop() {
      await ledger.stop();
      await lease.stop();
    },
  };
}
