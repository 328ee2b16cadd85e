import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { CompiledQuery, Kysely, KyselyPlugin } from "kysely";
import { callRecord } from "../../test/support/call-record.ts";
import { createTestDatabase, storeSuite, type TestDatabase } from "../../test/support/postgres.ts";
import { createAccount } from "../accounts/accounts.ts";
import { createKey } from "../accounts/keys.ts";
import { migrate, openStore, type Store, type StoreOptions } from "../store/db.ts";
import type { Database } from "../store/schema.ts";
import type { CallRecord } from "./call-record.ts";
import { DAY_MS, startOfUtcDay, utcDay } from "./days.ts";
import { RecordWriter } from "./writer.ts";

function record(overrides: Partial<CallRecord> = {}): CallRecord {
  return callRecord({ params: '{"temperature":0.5}', latency_ms: 12, ...overrides });
}

/** A Kysely whose transaction() calls are counted; everything else passes through. */
/** A Kysely that counts the writer's commits: transactions (SQLite), or calls of gateway_commit_calls (PostgreSQL). */
function countingCommits(db: Kysely<Database>): { db: Kysely<Database>; count: () => number } {
  let n = 0;
  const proxy = new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === "transaction")
        return () => {
          n++;
          return target.transaction();
        };
      if (prop === "executeQuery")
        return (query: CompiledQuery) => {
          if (query.sql.startsWith("select gateway_commit_calls(")) n++;
          return target.executeQuery(query);
        };
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db: proxy, count: () => n };
}

/** Resolves to "settled" or "pending" after `ms`, without keeping the process alive after. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<"settled" | "pending"> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"pending">((r) => {
    timer = setTimeout(() => r("pending"), ms);
  });
  try {
    return await Promise.race([
      p.then(
        () => "settled" as const,
        () => "settled" as const,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A Kysely that counts the statements it executes (transactions included). */
function countingStatements(db: Kysely<Database>): { db: Kysely<Database>; count: () => number } {
  let n = 0;
  const plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      n++;
      return args.result;
    },
  };
  return { db: db.withPlugin(plugin), count: () => n };
}

type DailyTotals = Map<string, { prompt: number; completion: number; total: number; calls: number }>;

/** What daily_usage should hold for these records: sums per account, UTC day, key, model. */
function expectedDaily(records: CallRecord[]): DailyTotals {
  const out: DailyTotals = new Map();
  for (const r of records) {
    if (!r.account_id) continue;
    const id = [r.account_id, utcDay(r.created_at), r.key_id ?? "", r.public_model ?? ""].join("|");
    const t = out.get(id) ?? { prompt: 0, completion: 0, total: 0, calls: 0 };
    t.prompt += r.prompt_tokens;
    t.completion += r.completion_tokens;
    t.total += r.total_tokens;
    t.calls++;
    out.set(id, t);
  }
  return out;
}

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    let options: StoreOptions;
    let store: Store;
    /** a second connection (pool) to the same data: sees only what is committed */
    let observer: Store;
    let dir: string | undefined;
    let database: TestDatabase | undefined;

    before(async () => {
      if (kind === "postgres") {
        database = await createTestDatabase();
        options = { data_dir: "unused", database_url: database.url };
      } else {
        dir = mkdtempSync(join(tmpdir(), "gw-writer-test-"));
        options = { data_dir: dir };
      }
      store = openStore(options);
      await migrate(store);
      observer = openStore(options);
    });

    after(async () => {
      await observer?.close();
      await store?.close();
      await database?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    async function rowCount(where?: { requestIds: string[] }): Promise<number> {
      let q = observer.db.selectFrom("call_records").select((eb) => eb.fn.countAll<number>().as("n"));
      if (where) q = q.where("request_id", "in", where.requestIds);
      return Number((await q.executeTakeFirstOrThrow()).n);
    }

    async function account(name: string) {
      const a = await createAccount(store.db, { name, plan_id: "default" });
      const keys = [];
      for (let i = 0; i < 2; i++) keys.push((await createKey(store.db, { account_id: a.id })).key.id);
      return { id: a.id, keys };
    }

    test("a single record is written with every field", async () => {
      const writer = new RecordWriter(store.db, { onError: () => {} });
      const r = record({
        stream: 1,
        status: "client_disconnect",
        http_status: 499,
        error_code: "client_gone",
        prompt_tokens: 3,
        completion_tokens: 4,
        total_tokens: 7,
        usage_source: "estimated",
        ttft_ms: 5,
        safety_mode: "json",
        safety_verdict: "flagged",
        safety_categories: '["violence"]',
        safety_ms: 42,
      });
      await writer.write(r);
      const row = await observer.db
        .selectFrom("call_records")
        .selectAll()
        .where("request_id", "=", r.request_id)
        .executeTakeFirstOrThrow();
      assert.deepEqual({ ...row }, r);
    });

    test("500 concurrent writes are group-committed, and each resolves only once its row is visible", async () => {
      const counted = countingCommits(store.db);
      const writer = new RecordWriter(counted.db, { onError: () => {} });
      const records = Array.from({ length: 500 }, (_, i) => record({ prompt_tokens: i % 7 }));
      const invisible: string[] = [];
      await Promise.all(
        records.map((r) =>
          writer.write(r).then(async () => {
            const row = await observer.db
              .selectFrom("call_records")
              .select("request_id")
              .where("request_id", "=", r.request_id)
              .executeTakeFirst();
            if (!row) invisible.push(r.request_id);
          }),
        ),
      );
      assert.deepEqual(invisible, [], "every write resolved after its row was committed");
      assert.equal(await rowCount({ requestIds: records.map((r) => r.request_id) }), 500);
      assert.ok(counted.count() >= 1);
      assert.ok(counted.count() < 50, `500 writes took ${counted.count()} commits`);
    });

    test("more records than one batch holds are all written", async () => {
      const counted = countingCommits(store.db);
      const writer = new RecordWriter(counted.db, { onError: () => {} });
      const records = Array.from({ length: 1234 }, () => record());
      await Promise.all(records.map((r) => writer.write(r)));
      const ids = records.map((r) => r.request_id);
      let total = 0;
      for (let i = 0; i < ids.length; i += 500)
        total += await rowCount({ requestIds: ids.slice(i, i + 500) });
      assert.equal(total, 1234);
      assert.ok(counted.count() < 1234 / 10, `1234 writes took ${counted.count()} commits`);
    });

    test("writes arriving while a commit runs join the next batch", async () => {
      const counted = countingCommits(store.db);
      const writer = new RecordWriter(counted.db, { onError: () => {} });
      const pending: Promise<void>[] = [];
      // a first wave, then more writes from later turns of the event loop while it commits
      for (let wave = 0; wave < 5; wave++) {
        for (let i = 0; i < 100; i++) pending.push(writer.write(record()));
        await new Promise((r) => setImmediate(r));
      }
      await Promise.all(pending);
      assert.ok(counted.count() < 500, `${counted.count()} transactions for 500 records`);
    });

    test("the tokens of each key's and account's records add up to their counters", async () => {
      const writer = new RecordWriter(store.db, { onError: () => {} });
      const accounts = [await account("counted-a"), await account("counted-b"), await account("counted-c")];
      const expectedKey = new Map<string, number>();
      const expectedAccount = new Map<string, number>();
      const writes: Promise<void>[] = [];
      let seed = 7;
      const rand = (n: number) => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        return seed % n;
      };
      for (let round = 0; round < 4; round++) {
        for (let i = 0; i < 150; i++) {
          const a = accounts[rand(accounts.length)]!;
          const keyId = a.keys[rand(a.keys.length)]!;
          const prompt = rand(3) === 0 ? 0 : rand(500);
          const completion = rand(4) === 0 ? 0 : rand(800);
          // some rejected calls carry the account and key but no tokens; some carry neither
          const anonymous = rand(20) === 0;
          const r = record({
            account_id: anonymous ? null : a.id,
            key_id: anonymous ? null : keyId,
            prompt_tokens: anonymous ? 0 : prompt,
            completion_tokens: anonymous ? 0 : completion,
            total_tokens: anonymous ? 0 : prompt + completion,
            status: prompt + completion ? "ok" : "error",
          });
          if (r.key_id) expectedKey.set(r.key_id, (expectedKey.get(r.key_id) ?? 0) + r.total_tokens);
          if (r.account_id)
            expectedAccount.set(r.account_id, (expectedAccount.get(r.account_id) ?? 0) + r.total_tokens);
          writes.push(writer.write(r));
        }
        await new Promise((r) => setImmediate(r));
      }
      await Promise.all(writes);

      for (const a of accounts) {
        const row = await observer.db
          .selectFrom("accounts")
          .select("used_tokens")
          .where("id", "=", a.id)
          .executeTakeFirstOrThrow();
        assert.equal(Number(row.used_tokens), expectedAccount.get(a.id) ?? 0, `account ${a.id}`);
        const sum = await observer.db
          .selectFrom("call_records")
          .select((eb) => eb.fn.sum<number>("total_tokens").as("t"))
          .where("account_id", "=", a.id)
          .executeTakeFirstOrThrow();
        assert.equal(Number(sum.t ?? 0), Number(row.used_tokens), `records of account ${a.id}`);
        for (const keyId of a.keys) {
          const key = await observer.db
            .selectFrom("api_keys")
            .select("used_tokens")
            .where("id", "=", keyId)
            .executeTakeFirstOrThrow();
          assert.equal(Number(key.used_tokens), expectedKey.get(keyId) ?? 0, `key ${keyId}`);
          const keySum = await observer.db
            .selectFrom("call_records")
            .select((eb) => eb.fn.sum<number>("total_tokens").as("t"))
            .where("key_id", "=", keyId)
            .executeTakeFirstOrThrow();
          assert.equal(Number(keySum.t ?? 0), Number(key.used_tokens), `records of key ${keyId}`);
        }
      }
    });

    test("flush() drains the queue: every queued record is committed when it resolves", async () => {
      const writer = new RecordWriter(store.db, { onError: () => {} });
      const records = Array.from({ length: 300 }, () => record());
      let settled = 0;
      const writes = records.map((r) => writer.write(r).finally(() => settled++));
      await writer.flush();
      assert.equal(await rowCount({ requestIds: records.map((r) => r.request_id) }), 300);
      await Promise.all(writes);
      assert.equal(settled, 300);
      // nothing queued: flush resolves at once
      await writer.flush();
    });

    test("a record a shared journal does not take (Redis down) is committed before its write resolves", async () => {
      const taken: string[] = [];
      const removed: string[] = [];
      let down = false;
      const journal = {
        shared: true,
        append: async (r: CallRecord) => {
          if (down) throw new Error("Redis does not answer");
          taken.push(r.request_id);
        },
        seal: (batch: readonly CallRecord[]) => batch.map((r) => r.request_id),
        remove: (ids: readonly string[]) => {
          removed.push(...ids);
        },
      };
      const writer = new RecordWriter(store.db, { onError: () => {}, journal, commitIntervalMs: 50 });
      const journaled = record();
      await writer.write(journaled);
      assert.equal(await rowCount({ requestIds: [journaled.request_id] }), 0, "journaled: committed behind");
      down = true;
      const refused = record();
      await writer.write(refused);
      assert.equal(await rowCount({ requestIds: [refused.request_id] }), 1, "not journaled: committed first");
      await writer.flush();
      assert.equal(await rowCount({ requestIds: [journaled.request_id] }), 1);
      assert.deepEqual(taken, [journaled.request_id]);
      assert.ok(removed.includes(journaled.request_id), "the journal lets the committed record go");
    });

    test("flush() also waits for writes queued while it runs", async () => {
      const writer = new RecordWriter(store.db, { onError: () => {} });
      const first = Array.from({ length: 50 }, () => record());
      const later = Array.from({ length: 50 }, () => record());
      for (const r of first) void writer.write(r);
      const flushed = writer.flush();
      for (const r of later) void writer.write(r);
      await flushed;
      assert.equal(await rowCount({ requestIds: [...first, ...later].map((r) => r.request_id) }), 100);
    });

    test("a write issued just after another resolves is committed without further writes", async () => {
      // However many microtask turns after a commit resolves the next write arrives, it must
      // be committed on its own (not wait for some later write or a flush).
      const writer = new RecordWriter(store.db, { onError: () => {} });
      const stuck: number[] = [];
      for (let turns = 0; turns < 6; turns++) {
        // (wrapped in an object so the outer promise does not adopt the write's promise)
        const { next } = await new Promise<{ next: Promise<void> }>((resolve) => {
          void writer.write(record()).then(() => {
            let p = Promise.resolve();
            for (let t = 0; t < turns; t++) p = p.then(() => {});
            void p.then(() => resolve({ next: writer.write(record()) }));
          });
        });
        if ((await settledWithin(next, 3_000)) === "pending") {
          stuck.push(turns);
          await writer.flush(); // unstick it, so the test can go on and end
          await next;
        }
      }
      assert.deepEqual(stuck, [], "writes issued this many microtask turns after a commit stayed queued");
    });

    test("a failing batch is retried, then its promises reject and onError hears every attempt", async () => {
      const errors: { err: unknown; attempt: number }[] = [];
      const writer = new RecordWriter(store.db, { onError: (err, attempt) => errors.push({ err, attempt }) });
      const a = await account("failing");
      const existing = record({ account_id: a.id, key_id: a.keys[0]!, prompt_tokens: 10, total_tokens: 10 });
      await writer.write(existing);
      assert.equal(errors.length, 0);

      // A batch holding a record whose request_id already exists violates the primary key.
      const batch = [
        record({ account_id: a.id, key_id: a.keys[0]!, prompt_tokens: 5, total_tokens: 5 }),
        { ...existing, created_at: existing.created_at + 1 },
        record({ account_id: a.id, key_id: a.keys[1]!, prompt_tokens: 7, total_tokens: 7 }),
      ];
      const results = await Promise.allSettled(batch.map((r) => writer.write(r)));
      for (const r of results) assert.equal(r.status, "rejected");
      assert.deepEqual(
        errors.map((e) => e.attempt),
        [1, 2, 3],
      );
      for (const r of results)
        if (r.status === "rejected")
          assert.equal(r.reason, errors.at(-1)!.err, "rejected with the last error");

      // Nothing of the failed batch was committed: no rows, no counters.
      assert.equal(await rowCount({ requestIds: [batch[0]!.request_id, batch[2]!.request_id] }), 0);
      const acc = await observer.db
        .selectFrom("accounts")
        .select("used_tokens")
        .where("id", "=", a.id)
        .executeTakeFirstOrThrow();
      assert.equal(Number(acc.used_tokens), 10);
      const keys = await observer.db
        .selectFrom("api_keys")
        .select(["id", "used_tokens"])
        .where("account_id", "=", a.id)
        .execute();
      assert.deepEqual(Object.fromEntries(keys.map((k) => [k.id, Number(k.used_tokens)])), {
        [a.keys[0]!]: 10,
        [a.keys[1]!]: 0,
      });

      // The writer goes on working after a failed batch.
      const next = record({ account_id: a.id, key_id: a.keys[1]!, prompt_tokens: 1, total_tokens: 1 });
      await writer.write(next);
      assert.equal(await rowCount({ requestIds: [next.request_id] }), 1);
      assert.equal(errors.length, 3, "a good batch reports nothing");
    });

    test("a duplicate request_id inside one batch fails that batch", async () => {
      const errors: number[] = [];
      const writer = new RecordWriter(store.db, { onError: (_err, attempt) => errors.push(attempt) });
      const twin = record();
      const results = await Promise.allSettled([writer.write(twin), writer.write({ ...twin })]);
      assert.deepEqual(
        results.map((r) => r.status),
        ["rejected", "rejected"],
      );
      assert.deepEqual(errors, [1, 2, 3]);
      assert.equal(await rowCount({ requestIds: [twin.request_id] }), 0);
    });

    test("a batch that fails once and then succeeds resolves, reporting the failed attempt", async () => {
      const errors: number[] = [];
      let failures = 1;
      // SQLite commits a transaction, PostgreSQL one statement (executeQuery)
      const flaky = new Proxy(store.db, {
        get(target, prop) {
          if (prop === "transaction" && failures > 0)
            return () => {
              failures--;
              return { execute: () => Promise.reject(new Error("connection reset")) };
            };
          if (prop === "executeQuery" && kind === "postgres" && failures > 0)
            return () => {
              failures--;
              return Promise.reject(new Error("connection reset"));
            };
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const writer = new RecordWriter(flaky, { onError: (_err, attempt) => errors.push(attempt) });
      const records = [record(), record()];
      await Promise.all(records.map((r) => writer.write(r)));
      assert.deepEqual(errors, [1]);
      assert.equal(await rowCount({ requestIds: records.map((r) => r.request_id) }), 2);
    });

    async function dailyOf(accountIds: string[]): Promise<DailyTotals> {
      const rows = await observer.db
        .selectFrom("daily_usage")
        .selectAll()
        .where("account_id", "in", accountIds)
        .execute();
      return new Map(
        rows.map((r) => [
          [r.account_id, r.day, r.key_id, r.model].join("|"),
          {
            prompt: Number(r.prompt_tokens),
            completion: Number(r.completion_tokens),
            total: Number(r.total_tokens),
            calls: Number(r.calls),
          },
        ]),
      );
    }

    /** Records over a few UTC days (both sides of midnights), keys, models, with and without each. */
    function spread(accounts: { id: string; keys: string[] }[], n: number, seed: number): CallRecord[] {
      const today = startOfUtcDay(Date.now());
      // the high bits of the generator: its low bits repeat with short periods
      const rand = (m: number) => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        return Math.floor((seed / 2 ** 31) * m);
      };
      return Array.from({ length: n }, () => {
        const a = accounts[rand(accounts.length)]!;
        // the last and first milliseconds of days, and times in between
        const edge = rand(3);
        const day = today - rand(4) * DAY_MS;
        const created_at = edge === 0 ? day : edge === 1 ? day + DAY_MS - 1 : day + rand(DAY_MS);
        const prompt = rand(4) === 0 ? 0 : rand(300);
        const completion = rand(4) === 0 ? 0 : rand(500);
        return record({
          created_at,
          account_id: rand(15) === 0 ? null : a.id,
          key_id: rand(10) === 0 ? null : a.keys[rand(a.keys.length)]!,
          public_model: rand(10) === 0 ? null : ["demo", "gpt-x"][rand(2)]!,
          prompt_tokens: prompt,
          completion_tokens: completion,
          total_tokens: prompt + completion,
        });
      });
    }

    test("daily aggregates equal the sums of the records, per account, UTC day, key and model", async () => {
      const writer = new RecordWriter(store.db, { onError: () => {} });
      const accounts = [await account("daily-a"), await account("daily-b")];
      const records = spread(accounts, 700, 11);
      // in waves, so several batches add to the same rows
      for (let i = 0; i < records.length; i += 100)
        await Promise.all(records.slice(i, i + 100).map((r) => writer.write(r)));
      const ids = accounts.map((a) => a.id);
      const expected = expectedDaily(records);
      assert.ok(expected.size > 20, "the records cover many days, keys and models");
      assert.deepEqual(await dailyOf(ids), expected);
      // and the same sums come from the committed records themselves
      const stored = await observer.db
        .selectFrom("call_records")
        .selectAll()
        .where("account_id", "in", ids)
        .execute();
      assert.deepEqual(
        expectedDaily(stored.map((r) => ({ ...r, created_at: Number(r.created_at) }) as CallRecord)),
        expected,
      );
    });

    test("daily aggregates stay exact when two writers (two connections) commit at once", async () => {
      // Two writers on separate connections, as two gateway instances would be, adding to the
      // same daily rows concurrently.
      const second = openStore(options);
      try {
        const a = new RecordWriter(store.db, { onError: () => {} });
        const b = new RecordWriter(second.db, { onError: () => {} });
        const accounts = [await account("concurrent-a"), await account("concurrent-b")];
        const records = spread(accounts, 1200, 23);
        const writes: Promise<void>[] = [];
        for (let i = 0; i < records.length; i += 60) {
          records.slice(i, i + 60).forEach((r, j) => {
            writes.push((j % 2 ? a : b).write(r));
          });
          await new Promise((r) => setImmediate(r));
        }
        await Promise.all(writes);
        assert.deepEqual(await dailyOf(accounts.map((x) => x.id)), expectedDaily(records));
      } finally {
        await second.close();
      }
    });

    test("a batch of 500 records is a handful of statements (one on PostgreSQL); records without an account add no daily rows", async () => {
      const accounts = [await account("stmts-a"), await account("stmts-b")];
      const records = spread(accounts, 500, 5).map((r) => ({
        ...r,
        account_id: r.account_id ?? accounts[0]!.id,
      }));
      const counted = countingStatements(store.db);
      const writer = new RecordWriter(counted.db, { onError: () => {} });
      await Promise.all(records.map((r) => writer.write(r)));
      const keys = new Set(records.filter((r) => r.key_id && r.total_tokens).map((r) => r.key_id));
      const accountsCharged = new Set(records.filter((r) => r.total_tokens).map((r) => r.account_id));
      const groups = expectedDaily(records).size;
      // SQLite: one insert, one update per key and per account charged, one upsert per 100
      // daily rows; PostgreSQL: the whole batch in one statement
      assert.equal(
        counted.count(),
        kind === "postgres" ? 1 : 1 + keys.size + accountsCharged.size + Math.ceil(groups / 100),
      );

      const before = await observer.db
        .selectFrom("daily_usage")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      await Promise.all(
        Array.from({ length: 20 }, () => writer.write(record({ prompt_tokens: 3, total_tokens: 3 }))),
      );
      const after = await observer.db
        .selectFrom("daily_usage")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n));
    });
  });
}
