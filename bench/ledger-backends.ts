// The measurement behind the shared ledger's design (docs/decisions/0013-accounting-across-instances.md, issue #9): one hold
// and its close, as PostgreSQL conditional updates (the functions of migration 008, one round
// trip each) and as Redis Lua scripts (a check-and-hold and a close on one hash per subject,
// what a Redis ledger would run), from N concurrent callers, on one hot key and account and
// spread over 100 keys. Prints holds per second and the latency of one hold. Not part of
// `npm test`.
//
//   node bench/ledger-backends.ts [--seconds 5] [--concurrency 32] [--redis redis://127.0.0.1:6379]
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { sql } from "kysely";
import { migrate, openStore } from "../src/store/db.ts";
import { createTestDatabase } from "../test/support/postgres.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    concurrency: { type: "string", default: "32" },
    redis: { type: "string", default: "redis://127.0.0.1:6379" },
  },
});
const SECONDS = Number(values.seconds);
const CONCURRENCY = Number(values.concurrency);

interface Backend {
  /** holds 100 tokens on (account, key); returns a close function */
  hold(account: string, key: string): Promise<() => Promise<void>>;
}

async function measure(name: string, backend: Backend, subjects: [string, string][]) {
  const latencies: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  let n = 0;
  const worker = async (w: number) => {
    while (performance.now() < until) {
      const [account, key] = subjects[(w + n++) % subjects.length]!;
      const t0 = performance.now();
      const close = await backend.hold(account, key);
      latencies.push(performance.now() - t0);
      await close();
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.floor(p * (latencies.length - 1))]!.toFixed(2);
  process.stdout.write(
    `${name.padEnd(34)} ${String(Math.round(latencies.length / seconds)).padStart(7)} holds+closes/s   hold p50 ${q(0.5)} ms  p99 ${q(0.99)} ms\n`,
  );
}

const RESERVE_LUA = `
local a = redis.call('HMGET', KEYS[1], 'quota', 'used', 'reserved')
local k = redis.call('HMGET', KEYS[2], 'limit', 'used', 'reserved')
local room = tonumber(a[1]) - tonumber(a[2]) - tonumber(a[3])
local kroom = tonumber(k[1]) - tonumber(k[2]) - tonumber(k[3])
if kroom < room then room = kroom end
local want = tonumber(ARGV[1])
if room < want then return 0 end
redis.call('HINCRBY', KEYS[1], 'reserved', want)
redis.call('HINCRBY', KEYS[2], 'reserved', want)
local id = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[4], id, ARGV[2] .. ' ' .. want)
return id`;
const CLOSE_LUA = `
if redis.call('HDEL', KEYS[3], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[2], 'reserved', -tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[1], 'used', tonumber(ARGV[3]))
redis.call('HINCRBY', KEYS[2], 'used', tonumber(ARGV[3]))
return 1`;

async function main() {
  const subjectsHot: [string, string][] = [["a0", "k0"]];
  const subjectsSpread: [string, string][] = Array.from({ length: 100 }, (_, i) => [`a${i % 10}`, `k${i}`]);

  const database = await createTestDatabase();
  const store = openStore({ data_dir: ".", database_url: database.url });
  await migrate(store);
  const big = 1e15;
  for (let i = 0; i < 10; i++)
    await sql`insert into accounts (id, name, plan_id, quota_tokens, created_at) values (${`a${i}`}, ${`a${i}`}, 'p', ${big}, 0)`.execute(
      store.db,
    );
  for (let i = 0; i < 100; i++)
    await sql`insert into api_keys (id, account_id, prefix, secret_hash, limit_tokens, created_at) values (${`k${i}`}, ${`a${i % 10}`}, 'x', ${`h${i}`}, ${big}, 0)`.execute(
      store.db,
    );
  /**
   * `batched`: closes wait for one transaction that closes all waiting, as the record writer
   * closes holds with the records it commits; `lazyCommit`: holds are committed without
   * waiting for the WAL flush (synchronous_commit off).
   */
  const pgBackend = (batched: boolean, lazyCommit: boolean): Backend => {
    let queue: { id: number; key: string; account: string; done: () => void }[] = [];
    let scheduled = false;
    const flush = async () => {
      while (queue.length) {
        const batch = queue;
        queue = [];
        await sql`select gateway_ledger_close(${batch.map((b) => b.id)}::bigint[], ${batch.map((b) => b.key)}::text[], ${batch.map(() => 50)}::bigint[], ${batch.map((b) => b.account)}::text[], ${batch.map(() => 50)}::bigint[])`.execute(
          store.db,
        );
        for (const b of batch) b.done();
      }
      scheduled = false;
    };
    return {
      async hold(account, key) {
        const reserve = sql<{
          reservation_id: number;
        }>`select reservation_id from gateway_reserve('bench', ${account}, ${key}, 0, 100, 100, null, 0)`;
        const r = lazyCommit
          ? await store.db.transaction().execute(async (trx) => {
              await sql`set local synchronous_commit = off`.execute(trx);
              return reserve.execute(trx);
            })
          : await reserve.execute(store.db);
        const id = r.rows[0]!.reservation_id;
        if (!batched)
          return async () => {
            await sql`select gateway_ledger_close(array[${id}]::bigint[], array[${key}], array[50]::bigint[], array[${account}], array[50]::bigint[])`.execute(
              store.db,
            );
          };
        return () =>
          new Promise<void>((done) => {
            queue.push({ id, key, account, done });
            if (scheduled) return;
            scheduled = true;
            setImmediate(() => void flush());
          });
      },
    };
  };

  const redis = new Redis(values.redis!);
  const prefix = `bench:${randomBytes(4).toString("hex")}:`;
  for (let i = 0; i < 10; i++) await redis.hset(`${prefix}acct:a${i}`, { quota: big, used: 0, reserved: 0 });
  for (let i = 0; i < 100; i++) await redis.hset(`${prefix}key:k${i}`, { limit: big, used: 0, reserved: 0 });
  redis.defineCommand("gwReserve", { numberOfKeys: 4, lua: RESERVE_LUA });
  redis.defineCommand("gwClose", { numberOfKeys: 3, lua: CLOSE_LUA });
  const r = redis as unknown as {
    gwReserve(...args: (string | number)[]): Promise<number>;
    gwClose(...args: (string | number)[]): Promise<number>;
  };
  const lua: Backend = {
    async hold(account, key) {
      const keys = [`${prefix}acct:${account}`, `${prefix}key:${key}`, `${prefix}seq`, `${prefix}holds`];
      const id = await r.gwReserve(...keys, 100, "bench");
      return async () => {
        await r.gwClose(keys[0]!, keys[1]!, keys[3]!, id, 100, 50);
      };
    },
  };

  process.stdout.write(`${CONCURRENCY} concurrent callers, ${SECONDS} s each\n`);
  try {
    await measure("PostgreSQL, one hot key", pgBackend(false, false), subjectsHot);
    await measure("PostgreSQL, 100 keys / 10 accounts", pgBackend(false, false), subjectsSpread);
    await measure("PostgreSQL, closes batched, hot key", pgBackend(true, false), subjectsHot);
    await measure("PostgreSQL, closes batched, 100 keys", pgBackend(true, false), subjectsSpread);
    await measure("PostgreSQL, batched + lazy commit, hot", pgBackend(true, true), subjectsHot);
    await measure("PostgreSQL, batched + lazy commit, 100", pgBackend(true, true), subjectsSpread);
    await measure("Redis Lua, one hot key", lua, subjectsHot);
    await measure("Redis Lua, 100 keys / 10 accounts", lua, subjectsSpread);
  } finally {
    const stale = await redis.keys(`${prefix}*`);
    if (stale.length) await redis.del(...stale);
    redis.disconnect();
    await store.close();
    await database.drop();
  }
}

await main();
