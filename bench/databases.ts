// PostgreSQL databases and Redis key prefixes that a benchmark run makes for itself, on the
// local servers, and removes when it ends, however it ends (also on Ctrl-C). Each database is
// `gw_bench_<random>`, each prefix `bench:<random>:`, so runs side by side never meet.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";

export const PG_ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** Databases this process made that go when it ends (all but those handed to keepDatabase). */
const temporary = new Set<string>();
/** Redis key prefixes this process made, whose keys go when it ends. */
const prefixes = new Set<string>();

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The URL of a database on the admin URL's server (no credentials beyond the admin URL's). */
export function databaseUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Where the PostgreSQL server is, for a report: host and port, no credentials. */
export function postgresHost(): string {
  const url = new URL(PG_ADMIN_URL);
  return `${url.hostname}:${url.port || 5432}`;
}

/** The application_name of each backend connected to `database` now, by pid. */
export async function backendNames(database: string): Promise<Map<number, string>> {
  const { rows } = await admin((c) =>
    c.query<{ pid: number; application_name: string }>(
      "select pid, application_name from pg_stat_activity where datname = $1",
      [database],
    ),
  );
  return new Map(rows.map((r) => [r.pid, r.application_name]));
}

/** A new database, empty or a copy of a template (which must have no open connections). */
export async function createDatabase(template?: string): Promise<string> {
  const name = `gw_bench_${randomBytes(6).toString("hex")}`;
  temporary.add(name);
  try {
    await admin((c) => c.query(`create database ${name}${template ? ` template ${template}` : ""}`));
  } catch (err) {
    throw new Error(
      `could not create a PostgreSQL database on ${postgresHost()} (TEST_PG_ADMIN_URL): ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return name;
}

/** A database made here that stays when the run ends (console --keep). */
export function keepDatabase(name: string): void {
  temporary.delete(name);
}

/** Drops the databases this process made and did not keep. */
export async function dropTemporaryDatabases(): Promise<void> {
  for (const name of temporary) {
    await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    temporary.delete(name);
  }
}

/** Fail at once rather than retry: the run needs the server now. */
const REDIS_OPTIONS = {
  lazyConnect: true,
  connectTimeout: 3_000,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
};

async function withRedis<T>(fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(REDIS_URL, REDIS_OPTIONS);
  client.on("error", () => {}); // the failing call reports it
  try {
    await client.connect();
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

/** Where the Redis server is, for a report. */
export function redisHost(): string {
  const url = new URL(REDIS_URL);
  return `${url.hostname}:${url.port || 6379}`;
}

/**
 * A key prefix of the run's own on the Redis server, which must answer; and the server's pid
 * (from INFO), so its CPU time can be read where it runs on this machine.
 */
export async function createRedisPrefix(): Promise<{ prefix: string; pid: number | undefined }> {
  let info: string;
  try {
    info = await withRedis((c) => c.info("server"));
  } catch (err) {
    throw new Error(
      `Redis on ${redisHost()} (TEST_REDIS_URL) did not answer: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const prefix = `bench:${randomBytes(6).toString("hex")}:`;
  prefixes.add(prefix);
  const pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
  return { prefix, pid: Number.isInteger(pid) && pid > 0 ? pid : undefined };
}

/** Deletes every key under the prefixes this process made. */
export async function dropRedisPrefixes(): Promise<void> {
  if (prefixes.size === 0) return;
  await withRedis(async (client) => {
    for (const prefix of prefixes) {
      let cursor = "0";
      do {
        const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
        if (keys.length) await client.unlink(...keys);
        cursor = next;
      } while (cursor !== "0");
      prefixes.delete(prefix);
    }
  });
}
