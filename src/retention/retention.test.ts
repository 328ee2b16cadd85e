import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { callRecord } from "../../test/support/call-record.ts";
import { createTestDatabase, storeSuite, type TestDatabase } from "../../test/support/postgres.ts";
import { createAccount } from "../accounts/accounts.ts";
import { createLogger } from "../observability/logger.ts";
import type { CallRecord } from "../records/call-record.ts";
import { DAY_MS, startOfUtcDay, utcDay, windowStart } from "../records/days.ts";
import { RecordWriter } from "../records/writer.ts";
import { migrate, openStore, type Store } from "../store/db.ts";
import { pruneRecords, RetentionJob } from "./retention.ts";

/** A fixed "now": midday, so "today" has room on both sides. */
const NOW = Date.UTC(2031, 0, 15, 12, 0, 0);
const TODAY = startOfUtcDay(NOW);
const SETTINGS = { records_kept: 5, days: 10 };

function record(created_at: number, account_id: string | null, tokens: number, id?: string): CallRecord {
  return callRecord({
    ...(id ? { request_id: id } : {}),
    created_at,
    account_id,
    upstream_model: "demo",
    status: tokens ? "ok" : "error",
    http_status: tokens ? 200 : 429,
    prompt_tokens: tokens,
  });
}

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`record retention (${kind})`, await storeSuite(kind), () => {
    let store: Store;
    let dir: string | undefined;
    let database: TestDatabase | undefined;
    let writer: RecordWriter;

    before(async () => {
      if (kind === "postgres") {
        database = await createTestDatabase();
        store = openStore({ data_dir: "unused", database_url: database.url });
      } else {
        dir = mkdtempSync(join(tmpdir(), "gw-retention-test-"));
        store = openStore({ data_dir: dir });
      }
      await migrate(store);
      writer = new RecordWriter(store.db, { onError: () => {} });
    });

    after(async () => {
      await store?.close();
      await database?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    async function ids(
      where: (r: { account_id: string | null }) => boolean = () => true,
    ): Promise<Set<string>> {
      const rows = await store.db.selectFrom("call_records").select(["request_id", "account_id"]).execute();
      return new Set(rows.filter(where).map((r) => r.request_id));
    }

    async function dailyTotals(fromDay = ""): Promise<string> {
      const rows = await store.db
        .selectFrom("daily_usage")
        .selectAll()
        .where("day", ">=", fromDay)
        .orderBy("account_id")
        .orderBy("day")
        .orderBy("key_id")
        .orderBy("model")
        .execute();
      return JSON.stringify(rows.map((r) => [r.account_id, r.day, Number(r.total_tokens), Number(r.calls)]));
    }

    test("each rule deletes what it should and keeps everything else; daily aggregates stay for the window", async () => {
      const a = (await createAccount(store.db, { name: "busy", plan_id: "default" })).id;
      const b = (await createAccount(store.db, { name: "quiet", plan_id: "default" })).id;
      const c = (await createAccount(store.db, { name: "today-only", plan_id: "default" })).id;
      const keep: CallRecord[] = [];
      const drop: CallRecord[] = [];
      const hour = 3_600_000;

      // Account a: 3 consumption records today (they count towards the 5 kept and stay).
      for (let i = 0; i < 3; i++) keep.push(record(TODAY + i * hour, a, 10));
      // 8 on past days inside the window: the newest 2 complete the 5, the other 6 go. The
      // 2nd and 3rd newest share a millisecond; the request id decides between them.
      const tie = TODAY - 2 * DAY_MS;
      keep.push(record(TODAY - DAY_MS, a, 10));
      keep.push(record(tie, a, 10, "req_tie_b"));
      drop.push(record(tie, a, 10, "req_tie_a"));
      for (let d = 3; d <= 7; d++) drop.push(record(TODAY - d * DAY_MS, a, 10));
      // consumption older than the 10-day window
      drop.push(record(windowStart(NOW, 10) - 1, a, 10), record(TODAY - 12 * DAY_MS, a, 10));
      // nothing consumed: kept today, deleted on past days however recent
      for (let i = 0; i < 3; i++) keep.push(record(TODAY + i * hour + 1, a, 0));
      drop.push(record(TODAY - 1, a, 0), record(TODAY - 3 * DAY_MS, a, 0), record(TODAY - 20 * DAY_MS, a, 0));

      // Account b: few records; the oldest day of the window is in, the day before is out.
      keep.push(record(windowStart(NOW, 10), b, 5), record(TODAY - 3 * DAY_MS, b, 5), record(TODAY, b, 0));
      drop.push(record(windowStart(NOW, 10) - DAY_MS, b, 5));

      // Account c: 7 consumption records, all today: more than 5, none deleted.
      for (let i = 0; i < 7; i++) keep.push(record(TODAY + i * 1000, c, 3));

      // Refused calls without an account: only today's stay.
      keep.push(record(TODAY + hour, null, 0));
      drop.push(record(TODAY - hour, null, 0), record(TODAY - 2 * DAY_MS, null, 0));

      await Promise.all([...keep, ...drop].map((r) => writer.write(r)));
      const firstDay = utcDay(windowStart(NOW, 10));
      const dailyBefore = await dailyTotals(firstDay);

      const counts = await pruneRecords(store.db, SETTINGS, NOW);
      // a's days 10, 12 and 20 days ago and b's day 10 days ago are older than the window
      assert.deepEqual(counts, { no_consumption: 5, expired: 3, beyond_kept: 6, daily_rows: 4 });
      const left = await ids();
      for (const r of keep) assert.ok(left.has(r.request_id), `kept ${JSON.stringify(r)}`);
      for (const r of drop) assert.ok(!left.has(r.request_id), `deleted ${JSON.stringify(r)}`);
      assert.equal(left.size, keep.length);
      assert.equal(
        await dailyTotals(),
        dailyBefore,
        "daily_usage is kept for the window, whatever records went",
      );

      // a second run finds nothing more to delete
      assert.deepEqual(await pruneRecords(store.db, SETTINGS, NOW), {
        no_consumption: 0,
        expired: 0,
        beyond_kept: 0,
        daily_rows: 0,
      });
      assert.equal((await ids()).size, keep.length);

      // the next day, yesterday's records are past records like any other
      const tomorrow = NOW + DAY_MS;
      const next = await pruneRecords(store.db, SETTINGS, tomorrow);
      // yesterday's zero-token records (3 of a, 1 of b, 1 without account); b's record on
      // what is now the 11th day; 2 of c's 7 consumption records of yesterday
      // and b's aggregate of what is now the 11th day
      assert.deepEqual(next, { no_consumption: 5, expired: 1, beyond_kept: 2, daily_rows: 1 });
      const consumptionLeft = await store.db
        .selectFrom("call_records")
        .select(["account_id"])
        .where("total_tokens", ">", 0)
        .execute();
      const per = (id: string) => consumptionLeft.filter((r) => r.account_id === id).length;
      assert.equal(per(a), 5);
      assert.equal(per(c), 5, "yesterday's consumption of c is now pruned to the newest 5");
      assert.equal(per(b), 1);
    });

    test("large deletes go in chunks and all of it goes", async () => {
      const d = (await createAccount(store.db, { name: "bulk", plan_id: "default" })).id;
      const old = Array.from({ length: 2_345 }, (_, i) => record(TODAY - DAY_MS - i, d, 0));
      const consumed = Array.from({ length: 1_200 }, (_, i) => record(TODAY - 2 * DAY_MS - i, d, 7));
      for (let i = 0; i < old.length; i += 500)
        await store.db
          .insertInto("call_records")
          .values(old.slice(i, i + 500))
          .execute();
      for (let i = 0; i < consumed.length; i += 500)
        await store.db
          .insertInto("call_records")
          .values(consumed.slice(i, i + 500))
          .execute();
      const counts = await pruneRecords(store.db, SETTINGS, NOW);
      assert.equal(counts.no_consumption, 2_345);
      assert.equal(counts.beyond_kept, 1_200 - SETTINGS.records_kept);
      assert.equal((await ids((r) => r.account_id === d)).size, SETTINGS.records_kept);
    });

    test("the job logs one line per run with its counts", async () => {
      const lines: string[] = [];
      const logger = createLogger(
        "info",
        new Writable({
          write(chunk, _enc, cb) {
            lines.push(chunk.toString());
            cb();
          },
        }),
      );
      const job = new RetentionJob(
        store.db,
        { enabled: true, interval_minutes: 60, responses_days: 30, ...SETTINGS },
        logger,
      );
      const counts = await job.run();
      assert.ok(counts);
      await job.stop();
      assert.equal(lines.length, 1);
      const line = JSON.parse(lines[0]!);
      assert.equal(line.msg, "record retention run");
      assert.deepEqual(line.retention, counts);
    });
  });
}
