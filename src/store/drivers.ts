// The PostgreSQL and Redis client libraries, loaded the first time a store uses them. A default
// instance runs on SQLite and never does, and loading the two cost its idle process about 7 MB
// (decision 0039). Both are CommonJS packages, so a synchronous require() loads them where an
// import() would make every store's opening asynchronous.
import { createRequire } from "node:module";
import type * as IoRedis from "ioredis";
import type * as Pg from "pg";

const require = createRequire(import.meta.url);

let pgModule: typeof Pg.default | undefined;
let ioredisModule: typeof IoRedis | undefined;

/** node-postgres (`pg`). */
export function postgresDriver(): typeof Pg.default {
  pgModule ??= require("pg") as typeof Pg.default;
  return pgModule;
}

/**
 * The application_name of the gateway's connections, as pg_stat_activity shows them: the store's
 * pool, the hold journal's own (src/ledger/reservation-log.ts), and the PostgreSQL ledger's
 * listener (src/ledger/postgres-ledger.ts). An application_name in the operator's DATABASE_URL
 * wins (pg reads the URL over the connection's settings).
 */
export const PG_APPLICATION = {
  store: "chat-gateway",
  holds: "chat-gateway holds",
  listener: "chat-gateway ledger",
} as const;

/**
 * A node-postgres pool whose connections may break at any time without ending the process.
 * A connection the server drops (restart, failover, a cut network) emits an error: while idle
 * the pool passes it to `onIdleError` and replaces the connection; while a query holds it
 * (Kysely takes a connection with `connect()`, where the pool stops listening) nobody listened,
 * so it was an uncaught exception. Its query fails with the error all the same, and the caller
 * hears that; the connection's own listener keeps the rest quiet.
 */
export function postgresPool(config: Pg.PoolConfig, onIdleError: (err: Error) => void): Pg.Pool {
  const pool = new (postgresDriver().Pool)(config);
  pool.on("connect", (client) => client.on("error", () => {}));
  pool.on("error", onIdleError);
  return pool;
}

/** ioredis. */
export function redisDriver(): typeof IoRedis {
  ioredisModule ??= require("ioredis") as typeof IoRedis;
  return ioredisModule;
}
