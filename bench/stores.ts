// The gateway's store in a benchmark run: SQLite in the run's temp folder, or a PostgreSQL
// database made for the run (with a Redis key prefix of its own for postgres+redis), shared
// by every gateway instance and removed when the run ends (see databases.ts).
import { PG_APPLICATION } from "../src/store/drivers.ts";
import {
  backendNames,
  createDatabase,
  createRedisPrefix,
  databaseUrl,
  dropRedisPrefixes,
  dropTemporaryDatabases,
  postgresHost,
  REDIS_URL,
  redisHost,
} from "./databases.ts";
import { backendsCpu, backendsSpent, cpuMicros } from "./proc-stats.ts";
import type { StoreKind } from "./types.ts";

export interface BenchStore {
  kind: StoreKind;
  /** the fields of the gateway config's `store` besides data_dir (which is each instance's own) */
  config: { database_url?: string; redis_url?: string; redis_prefix?: string };
  /** the run's PostgreSQL database */
  database?: string;
  /** the run's Redis key prefix */
  redisPrefix?: string;
  /** the Redis server's pid, when /proc shows it (a server on this machine) */
  redisPid?: number;
  /** where it is, for the report: no credentials */
  description: string;
}

export async function prepareStore(kind: StoreKind): Promise<BenchStore> {
  if (kind === "sqlite") return { kind, config: {}, description: "SQLite in the run's temp folder" };
  const database = await createDatabase();
  const postgres = { kind, database, config: { database_url: databaseUrl(database) } };
  const where = `PostgreSQL database ${database} on ${postgresHost()}`;
  if (kind === "postgres") return { ...postgres, description: where };
  const { prefix, pid } = await createRedisPrefix();
  return {
    ...postgres,
    config: { ...postgres.config, redis_url: REDIS_URL, redis_prefix: prefix },
    redisPrefix: prefix,
    ...(pid !== undefined && isVisible(pid) ? { redisPid: pid } : {}),
    description: `${where}, Redis on ${redisHost()} under ${prefix}`,
  };
}

function isVisible(pid: number): boolean {
  try {
    cpuMicros(pid);
    return true;
  } catch {
    return false;
  }
}

/** Drops the run's database and Redis keys, if it made any. */
export async function removeStores(): Promise<void> {
  await Promise.allSettled([dropTemporaryDatabases(), dropRedisPrefixes()]).then((results) => {
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  });
}

/** CPU counters of the store's own processes: the run database's backends, the Redis server. */
export interface StoreCpu {
  backends: Map<number, number>;
  redis: number;
}

export function storeCpu(store: BenchStore): StoreCpu {
  let redis = 0;
  if (store.redisPid !== undefined)
    try {
      redis = cpuMicros(store.redisPid);
    } catch {
      // the server is gone; its requests will fail on their own
    }
  return { backends: backendsCpu(store.database), redis };
}

/** The run database's backends that write the holds' journal rows, told by their application_name. */
export async function holdBackends(store: BenchStore): Promise<Set<number> | undefined> {
  const names = store.database ? await backendNames(store.database).catch(() => undefined) : undefined;
  return names && new Set([...names].filter(([, app]) => app === PG_APPLICATION.holds).map(([pid]) => pid));
}

/**
 * CPU the store's processes spent between two readings, in microseconds: PostgreSQL's and
 * Redis's; and of PostgreSQL's, the backends `holds` names (the hold journal's connections),
 * when it is given.
 */
export function storeSpentParts(
  before: StoreCpu,
  after: StoreCpu,
  holds?: ReadonlySet<number>,
): { postgres: number; holds?: number; redis: number } {
  const held = holds && new Map([...after.backends].filter(([pid]) => holds.has(pid)));
  return {
    postgres: backendsSpent(before.backends, after.backends),
    ...(held ? { holds: backendsSpent(before.backends, held) } : {}),
    redis: Math.max(0, after.redis - before.redis),
  };
}

/** CPU the store's processes spent between two readings, in microseconds. */
export function storeSpent(before: StoreCpu, after: StoreCpu): number {
  const { postgres, redis } = storeSpentParts(before, after);
  return postgres + redis;
}
