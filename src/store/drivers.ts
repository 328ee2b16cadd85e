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

/** ioredis. */
export function redisDriver(): typeof IoRedis {
  ioredisModule ??= require("ioredis") as typeof IoRedis;
  return ioredisModule;
}
