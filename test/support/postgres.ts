// A fresh PostgreSQL database per test suite on the local server, dropped afterwards.
// The admin URL can be overridden with TEST_PG_ADMIN_URL. Suites that need it pass
// `await needsPostgres()` (or `await storeSuite(kind)`) to describe().
import { randomBytes } from "node:crypto";
import pg from "pg";
import { needsRedis } from "./redis.ts";
import { type SuiteOptions, suiteNeeding } from "./services.ts";

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

let reachable: Promise<boolean> | undefined;

/** Runs the suite where PostgreSQL answers; elsewhere one line says it did not (CI=true: it fails). */
export async function needsPostgres(): Promise<SuiteOptions> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query("select 1");
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  const url = new URL(ADMIN_URL);
  return suiteNeeding("PostgreSQL", `${url.hostname}:${url.port || 5432}`, await reachable);
}

/** describe() options for a suite on one store: PostgreSQL's need the server, and Redis with it. */
export async function storeSuite(kind: "sqlite" | "postgres" | "postgres+redis"): Promise<SuiteOptions> {
  if (kind === "sqlite") return {};
  const postgres = await needsPostgres();
  return kind === "postgres" || postgres.skip ? postgres : needsRedis();
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `gw_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
