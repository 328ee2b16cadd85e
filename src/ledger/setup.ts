// Which ledger and rate limits an instance runs: in process on SQLite (one process, the
// default and the fastest path); on PostgreSQL, shared by every instance on the store, with
// rate limits per instance; with Redis too, ledger and rate limits in Redis (the store stays
// the truth and Redis's state is rebuilt from it).
import type { Logger } from "pino";
import type { Config } from "../config/schema.ts";
import { RateLimiter, type RateLimits } from "../rate-limits/rate-limiter.ts";
import { RedisRateLimiter } from "../rate-limits/redis-rate-limiter.ts";
import type { Store } from "../store/db.ts";
import { warnUnlessUnreachable } from "../store/reachability.ts";
import { RedisState } from "../store/redis-state.ts";
import { InstanceLease } from "./instances.ts";
import { MemoryLedger } from "./memory-ledger.ts";
import { PostgresLedger } from "./postgres-ledger.ts";
import { RedisLedger } from "./redis-ledger.ts";
import { recordedSessionUse } from "./session-use.ts";
import type { StoreHolds } from "./store-holds.ts";
import type { Ledger } from "./types.ts";

/** How long a start waits for Redis to answer before it listens anyway (refusing calls until it does). */
const REDIS_START_WAIT_MS = 2_000;

export interface LedgerSetup {
  ledger: Ledger;
  rates: RateLimits;
  /** the holds the record writer ends with their records (shared ledgers) */
  holds: StoreHolds | undefined;
  /** the Redis connection the ledger and rate limits use, when store.redis_url is set */
  redis: RedisState | undefined;
  /** before the first call: listens, takes the lease */
  start(): Promise<void>;
  /** after the last call: gives the lease up */
  stop(): Promise<void>;
}

/** `now`: the clock budget periods are read with */
export function ledgerSetup(
  config: Config,
  store: Store,
  logger: Logger,
  instanceId: string,
  now: () => number = Date.now,
): LedgerSetup {
  const { wait_ms: waitMs, lease_ms: leaseMs } = config.ledger;
  const url = config.store.database_url;
  if (store.dialect === "sqlite" || !url)
    return {
      ledger: new MemoryLedger({ waitMs, now, sessionUse: recordedSessionUse(store.db) }),
      rates: new RateLimiter(),
      holds: undefined,
      redis: undefined,
      start: async () => {},
      stop: async () => {},
    };
  const options = { url, instanceId, waitMs, leaseMs, logger, now };
  const redisUrl = config.store.redis_url;
  const redis = redisUrl ? new RedisState(redisUrl, config.store.redis_prefix, logger) : undefined;
  const ledger = redis ? new RedisLedger(redis, store, options) : new PostgresLedger(store.db, options);
  const rates = redis
    ? new RedisRateLimiter(
        redis,
        store.db,
        warnUnlessUnreachable(logger, "could not give rate-limit tokens back"),
      )
    : new RateLimiter();
  const lease = new InstanceLease(store, {
    id: instanceId,
    redis: redis !== undefined,
    leaseMs,
    logger,
    sweep: () => ledger.sweep(),
  });
  return {
    ledger,
    rates,
    holds: ledger,
    redis,
    async start() {
      await lease.start();
      await ledger.start();
      if (redis && !(await redis.connected(REDIS_START_WAIT_MS)))
        logger.warn("Redis did not answer at start: calls are refused (503) until it does");
    },
    async stop() {
      await ledger.stop();
      await lease.stop();
      await redis?.close();
    },
  };
}
