// What PostgreSQL's and Redis's own CPU costs per statement or command of the hot path, read
// from the server process's /proc/<pid>/stat around a few thousand executions on one
// connection (no load generator, no gateway): the floor under `npm run bench`'s "store
// µs/call", statement by statement. Each round trip's floor is read twice: back to back, and
// one every 2 ms (500 a second, the bench's fixed rate), where the server sleeps between
// requests and each one pays its wake-up, as a call of the bench's fixed-rate runs does. The
// ledger's Lua scripts are read as the ledger runs them, beside a script that does nothing: what
// a script costs Redis before its own commands (decision 0045). Needs
// PostgreSQL and Redis on the machine (the bench's servers; the run makes a database and a key
// prefix and drops them).
//   node bench/store-statements.ts
// The clock ticks every 10 ms: each figure is good to about 10 ms / executions.
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import pg from "pg";
import { createAccount } from "../src/accounts/accounts.ts";
import { createKey } from "../src/accounts/keys.ts";
import { NO_MONEY } from "../src/ledger/money.ts";
import { RedisLedger } from "../src/ledger/redis-ledger.ts";
import type { LedgerSubject, Reservation } from "../src/ledger/types.ts";
import { createLogger } from "../src/observability/logger.ts";
import { migrate, openStore } from "../src/store/db.ts";
import { RedisState } from "../src/store/redis-state.ts";
import { callRecord } from "../test/support/call-record.ts";
import { createTestDatabase } from "../test/support/postgres.ts";
import { createRedisPrefix, dropRedisPrefixes, REDIS_URL } from "./databases.ts";
import { cpuMicros } from "./proc-stats.ts";

const database = await createTestDatabase();
const store = openStore({ data_dir: "unused", database_url: database.url });
await migrate(store);
const account = await createAccount(store.db, { name: "statements", plan_id: "default" });
const key = (await createKey(store.db, { account_id: account.id })).key;
const client = new pg.Client({ connectionString: database.url });
await client.connect();
const pid = (await client.query<{ p: number }>("select pg_backend_pid() as p")).rows[0]!.p;
const { prefix: redisPrefix, pid: redisPid } = await createRedisPrefix();
const redis = new Redis(REDIS_URL);

/** the backend's CPU so far, µs */
const backendCpu = () => cpuMicros(pid);

/** the Redis server's CPU so far, µs */
function redisCpu(): number {
  return redisPid === undefined ? Number.NaN : cpuMicros(redisPid);
}

/** One execution every PACED_MS in the paced measurements: the bench's fixed rate. */
const PACED_MS = 2;

async function measure(
  name: string,
  n: number,
  per: number,
  run: () => Promise<unknown>,
  options: { cpu?: () => number; everyMs?: number; warmUp?: number } = {},
): Promise<void> {
  const cpu = options.cpu ?? backendCpu;
  const every = options.everyMs ?? 0;
  for (let i = 0; i < (options.warmUp ?? 50); i++) await run();
  const start = performance.now();
  const before = cpu();
  for (let i = 0; i < n; i++) {
    await run();
    if (every) await sleep(Math.max(0, start + (i + 1) * every - performance.now()));
  }
  const label = every ? `${name}, one every ${every} ms` : name;
  console.log(`${label.padEnd(58)} ${((cpu() - before) / (n * per)).toFixed(0).padStart(5)} µs`);
}

const HOLD = `insert into ledger_reservations (instance_id, hold, account_id, key_id, tokens, account_nanos,
  key_nanos, session_id, session_nanos, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;
const COMMIT = `select gateway_commit_calls($1::jsonb, $2::text[], $3::bigint[], $4::text[], $5::bigint[],
  $6::text[], $7::bigint[], $8::text[], $9::bigint[], $10, $11::jsonb, $12::jsonb, $13, $14, $15::jsonb,
  $16::bigint[], $17)`;
let hold = 0;
const holdRow = () => ["bench", ++hold, account.id, key.id, 100, 0, 0, null, 0, Date.now()];
/** the writer's parameters for a batch of n records of one key (no Redis holds) */
function batch(n: number): unknown[] {
  const records = Array.from({ length: n }, () =>
    callRecord({
      account_id: account.id,
      key_id: key.id,
      prompt_tokens: 10,
      completion_tokens: 20,
      public_model: "demo",
      upstream_model: "demo",
      provider: "demo",
    }),
  );
  const daily = [{ account_id: account.id, day: "2026-01-01", key_id: key.id, model: "demo" }];
  return [
    JSON.stringify(records),
    [key.id],
    [30 * n],
    [account.id],
    [30 * n],
    [],
    [],
    [],
    [],
    "2026-01",
    "[]",
    JSON.stringify(
      daily.map((d) => ({
        ...d,
        prompt_tokens: 10 * n,
        completion_tokens: 20 * n,
        total_tokens: 30 * n,
        calls: n,
        cost_nanos: 0,
      })),
    ),
    "none",
    null,
    "[]",
    [],
    Date.now(),
  ];
}

console.log("PostgreSQL backend CPU per execution (per record for batches):");
await measure("select 1 (a round trip's floor)", 2000, 1, () => client.query("select 1"));
await measure("select 1 (a round trip's floor)", 2000, 1, () => client.query("select 1"), {
  everyMs: PACED_MS,
});
await client.query("set synchronous_commit = off"); // as the hold journal's connections
await measure("a hold's journal row, unnamed", 2000, 1, () => client.query(HOLD, holdRow()));
await measure("a hold's journal row, prepared", 2000, 1, () =>
  client.query({ name: "hold", text: HOLD, values: holdRow() }),
);
await client.query("set synchronous_commit = on");
for (const n of [1, 2, 10, 50])
  await measure(`gateway_commit_calls, batches of ${n}, prepared`, Math.ceil(1000 / n), n, () =>
    client.query({ name: "commit", text: COMMIT, values: batch(n) }),
  );
await client.end();

console.log("Redis server CPU per command:");
if (redisPid === undefined) console.log("(the Redis server's process is not on this machine: not measured)");
else {
  // a record as the journal writes it (src/records/redis-journal.ts): its JSON, about 1 KB
  const entry = JSON.stringify({
    record: callRecord({ account_id: account.id, key_id: key.id, prompt_tokens: 10, completion_tokens: 20 }),
    hold: { id: 1, accountId: account.id, keyId: key.id },
  });
  const journal = `${redisPrefix}records:bench`;
  let field = 0;
  for (const everyMs of [0, PACED_MS]) {
    await measure("PING (a round trip's floor)", 3000, 1, () => redis.ping(), { cpu: redisCpu, everyMs });
    await measure(
      `HSET of a record (${entry.length} bytes), as the journal`,
      3000,
      1,
      () => redis.hset(journal, `r${++field}`, entry),
      { cpu: redisCpu, everyMs },
    );
  }
  await ledgerScripts();
}
redis.disconnect();
await store.close();
await database.drop();
await dropRedisPrefixes();

/**
 * The ledger's scripts as a call runs them (src/ledger/redis-ledger.ts), per hold: its hold (the
 * reserve script), and its close with the other holds of its records commit, CLOSES_A_COMMIT to
 * a script and one script every 100 ms as at the bench's rate (decision 0043). Beside them, a
 * script that returns at once: what any script costs Redis before its own work. Each hold's
 * journal row goes to PostgreSQL meanwhile, which is not counted here.
 */
async function ledgerScripts(): Promise<void> {
  const CLOSES_A_COMMIT = 50;
  const nothing = (await redis.script("LOAD", "return 1")) as string;
  const state = new RedisState(REDIS_URL, `${redisPrefix}ledger:`, createLogger("silent"));
  const ledger = new RedisLedger(state, store, {
    url: database.url,
    instanceId: "bench",
    waitMs: 1_000,
    leaseMs: 15_000,
    logger: createLogger("silent"),
  });
  await ledger.start();
  const subject: LedgerSubject = {
    accountId: account.id,
    accountQuota: 1e12,
    accountUsed: 0,
    keyId: key.id,
    keyLimit: null,
    keyUsed: 0,
    ...NO_MONEY,
  };
  const open: Reservation[] = [];
  const hold = async () => {
    const held = await ledger.reserve(subject, 100, 1);
    if (!held.ok) throw new Error(`the bench's hold was refused: ${held.reason}`);
    open.push(held.reservation);
  };
  /** closes the next CLOSES_A_COMMIT open holds, as a records commit that took them does */
  const closeCommit = async () => {
    const commit = open.splice(0, CLOSES_A_COMMIT);
    for (const r of commit) {
      ledger.journaled(r);
      await ledger.settle(r, 30, 0); // journaled: its close waits for the commit, below
    }
    ledger.closedInStore(commit);
    await ledger.closesDone();
  };
  for (const everyMs of [0, PACED_MS]) {
    await measure("EVALSHA of a script that returns at once", 3000, 1, () => redis.evalsha(nothing, 0), {
      cpu: redisCpu,
      everyMs,
    });
    await measure("a hold (the reserve script)", 3000, 1, hold, { cpu: redisCpu, everyMs });
  }
  const commits = 20;
  while (open.length < (commits + 2) * CLOSES_A_COMMIT) await hold();
  await measure(
    `a hold's close, ${CLOSES_A_COMMIT} holds to a script`,
    commits,
    CLOSES_A_COMMIT,
    closeCommit,
    {
      cpu: redisCpu,
      everyMs: 100,
      warmUp: 2,
    },
  );
  await ledger.stop();
  await state.close();
}
