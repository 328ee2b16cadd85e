// The console benchmark's seed: it adds up (counters, daily_usage), has the intended shape,
// its users can log in, and the same PRNG seed gives the same store, on SQLite and PostgreSQL.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { sql } from "kysely";
import { verifyPassword } from "../src/accounts/password.ts";
import { findUserByEmail } from "../src/accounts/users.ts";
import { createTestDatabase, needsPostgres, type TestDatabase } from "../test/support/postgres.ts";
import { checkSeed, openTarget, type SeedSummary, type StoreTarget, seedStore } from "./console-seed.ts";

const RECORDS = 4_000;
const ACCOUNTS = 12;
const quiet = () => {};

async function perAccountTokens(target: StoreTarget): Promise<Map<string, number>> {
  const store = openTarget(target);
  try {
    const { rows } = await sql<{ name: string; used_tokens: unknown }>`
      select name, used_tokens from accounts`.execute(store.db);
    return new Map(rows.map((r) => [r.name, Number(r.used_tokens)]));
  } finally {
    await store.close();
  }
}

async function assertSeeded(target: StoreTarget, summary: SeedSummary): Promise<void> {
  const check = await checkSeed(target, summary.now);
  assert.equal(check.records, RECORDS);
  assert.equal(check.recordsToday, summary.counts.recordsToday);
  assert.equal(summary.counts.recordsToday, RECORDS * 0.05);
  assert.equal(check.accountsOff, 0, "account counters equal their records' sums");
  assert.equal(check.keysOff, 0, "key counters equal their records' sums");
  assert.equal(check.dailyOff, 0, "daily_usage adds up to the records of each account");
  assert.equal(check.todayCallsOff, 0, "today's daily_usage calls equal today's records");
  const failedShare = check.zeroTokenRecords / check.records;
  assert.ok(failedShare > 0.05 && failedShare < 0.11, `about 8 % with no tokens, got ${failedShare}`);
  assert.ok(summary.big.records > 5 * summary.small.records, "a skewed spread: the first account is big");
  assert.ok(summary.big.keys.length >= 7);

  const store = openTarget(target);
  try {
    for (const user of Object.values(summary.users)) {
      const stored = await findUserByEmail(store.db, user.email);
      assert.equal(stored?.role, user.role);
      assert.equal(stored?.account_id, user.account_id);
      assert.ok(await verifyPassword(user.password, stored?.password_hash ?? null), "the password logs in");
    }
  } finally {
    await store.close();
  }
}

describe("console benchmark seed, SQLite", () => {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const target = (): StoreTarget => {
    const dir = mkdtempSync(join(tmpdir(), "console-seed-test-"));
    dirs.push(dir);
    return { kind: "sqlite", dataDir: dir };
  };

  test("adds up and has the intended shape", async () => {
    const t = target();
    const summary = await seedStore(t, { records: RECORDS, accounts: ACCOUNTS, seed: 7 }, quiet);
    await assertSeeded(t, summary);
  });

  test("the same seed gives the same store, another seed another one", async () => {
    const [a, b, c] = [target(), target(), target()];
    await seedStore(a, { records: RECORDS, accounts: ACCOUNTS, seed: 3 }, quiet);
    await seedStore(b, { records: RECORDS, accounts: ACCOUNTS, seed: 3 }, quiet);
    await seedStore(c, { records: RECORDS, accounts: ACCOUNTS, seed: 4 }, quiet);
    const [ta, tb, tc] = await Promise.all([a, b, c].map(perAccountTokens));
    assert.deepEqual(ta, tb);
    assert.notDeepEqual(ta, tc);
  });
});

describe("console benchmark seed, PostgreSQL", await needsPostgres(), () => {
  let database: TestDatabase | undefined;
  after(() => database?.drop());

  test("adds up and has the intended shape", async () => {
    database = await createTestDatabase();
    const t: StoreTarget = { kind: "postgres", url: database.url };
    const summary = await seedStore(t, { records: RECORDS, accounts: ACCOUNTS, seed: 7 }, quiet);
    await assertSeeded(t, summary);
  });
});
