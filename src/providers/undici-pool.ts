// undici's connection pool, without the rest of undici. The package's entry loads all of it,
// fetch, WebSocket, EventSource, the caches and the mock agents (109 modules, 1.27 MB of source),
// for the one class the gateway uses; each loaded module's source and compiled code stay in
// memory for the life of the process. The pool and its `request()` (which undici's entry
// mixes into every dispatcher) load 24 modules: an idle gateway measured 4 MB less
// (decision 0042). The two paths are undici's own files; the package has no `exports` map, and
// undici-pool.test.ts fails if an upgrade moves them.
import { createRequire } from "node:module";
import type { Pool as UndiciPool } from "undici";

const require = createRequire(import.meta.url);
const dispatcher = require("undici/lib/dispatcher/dispatcher.js") as { prototype: { request?: unknown } };
// what undici's entry does for every API; the gateway calls only request()
dispatcher.prototype.request ??= require("undici/lib/api/api-request.js");

/** undici's `Pool`, with `request()`. */
export const Pool = require("undici/lib/dispatcher/pool.js") as typeof UndiciPool;
export type Pool = UndiciPool;
export type PoolOptions = UndiciPool.Options;
