import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Kysely } from "kysely";
import { callRecord } from "../../test/support/call-record.ts";
import { createAccount } from "../accounts/accounts.ts";
import { createKey } from "../accounts/keys.ts";
import { migrate, openStore, type Store } from "../store/db.ts";
import type { Database } from "../store/schema.ts";
import { RecordJournal } from "./journal.ts";
import { RecordWriter } from "./writer.ts";

/** A pid no process has: a child that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", ""]).pid!;
}

describe("the call records' journal", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "gw-journal-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("a sealed segment is removed only when asked; appends after a seal go to a new one", () => {
    const j = new RecordJournal(join(dir, "seal"));
    j.append(callRecord({ request_id: "req_a" }));
    const first = j.seal();
    assert.equal(first.length, 1);
    j.append(callRecord({ request_id: "req_b" }));
    assert.equal(readdirSync(j.dir).length, 2);
    const both = j.seal();
    assert.equal(both.length, 2, "a segment stays sealed until its records are committed");
    j.remove(first);
    assert.deepEqual(j.seal(), both.slice(1));
    j.remove(both);
    assert.deepEqual(readdirSync(j.dir), []);
  });

  test("leftovers: a stopped process's segments in order, a torn last line skipped, a running process's left alone", () => {
    const d = join(dir, "left");
    new RecordJournal(d);
    const dead = deadPid();
    const line = (id: string) => `${JSON.stringify(callRecord({ request_id: id }))}\n`;
    writeFileSync(join(d, `records-${dead}-2.jsonl`), line("req_3"));
    writeFileSync(join(d, `records-${dead}-1.jsonl`), line("req_1") + line("req_2"));
    appendFileSync(join(d, `records-${dead}-2.jsonl`), '{"request_id":"req_4","crea');
    // the parent of this test runner is alive: its segment is not ours to replay
    writeFileSync(join(d, `records-${process.ppid}-1.jsonl`), line("req_busy"));
    const left = new RecordJournal(d).leftovers();
    assert.deepEqual(
      left.records.map((r) => r.request_id),
      ["req_1", "req_2", "req_3"],
    );
    assert.equal(left.unreadable, 1);
    assert.equal(left.files.length, 2);
    assert.deepEqual(left.busy, [join(d, `records-${process.ppid}-1.jsonl`)]);
  });

  test("a segment an earlier process of our pid left is replayed, and our own segments do not take its name", () => {
    const d = join(dir, "pid");
    const old = join(d, `records-${process.pid}-7.jsonl`);
    new RecordJournal(d);
    writeFileSync(old, `${JSON.stringify(callRecord({ request_id: "req_old" }))}\n`);
    const j = new RecordJournal(d);
    const left = j.leftovers();
    assert.deepEqual(
      left.records.map((r) => r.request_id),
      ["req_old"],
    );
    j.append(callRecord({ request_id: "req_new" }));
    const [mine] = j.seal();
    assert.notEqual(mine, old);
    assert.equal(readdirSync(d).length, 2);
  });
});

describe("the record writer behind a journal", () => {
  let dir: string;
  let store: Store;
  let db: Kysely<Database>;
  let key: { id: string; account_id: string };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "gw-journal-writer-"));
    store = openStore({ data_dir: dir });
    await migrate(store);
    db = store.db;
    const account = await createAccount(db, { name: "journal", plan_id: "default" });
    key = (await createKey(db, { account_id: account.id, name: "k" })).key;
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const used = async () =>
    Number(
      (
        await db
          .selectFrom("api_keys")
          .select("used_tokens")
          .where("id", "=", key.id)
          .executeTakeFirstOrThrow()
      ).used_tokens,
    );
  const count = async (ids: string[]) =>
    (await db.selectFrom("call_records").select("request_id").where("request_id", "in", ids).execute())
      .length;

  test("writes resolve at once, one commit takes the interval's records, the counters add up, the journal empties", async () => {
    const journal = new RecordJournal(join(dir, "j1"));
    let transactions = 0;
    const counted = new Proxy(db, {
      get(target, prop) {
        if (prop === "transaction") {
          transactions++;
          return () => target.transaction();
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const writer = new RecordWriter(counted, { onError: () => {}, journal, commitIntervalMs: 200 });
    const ids = Array.from({ length: 30 }, (_, i) => `req_j1_${i}`);
    const before = await used();
    for (const id of ids)
      await writer.write(
        callRecord({
          request_id: id,
          account_id: key.account_id,
          key_id: key.id,
          prompt_tokens: 3,
          completion_tokens: 2,
        }),
      );
    assert.equal(await count(ids), 0, "not committed yet: the interval has not passed");
    assert.equal(readdirSync(journal.dir).length, 1, "all in one journal segment");
    await writer.flush();
    assert.equal(await count(ids), 30);
    assert.equal((await used()) - before, 150);
    assert.deepEqual(readdirSync(journal.dir), [], "committed records leave the journal");
    assert.equal(transactions, 1, "one transaction for the interval's 30 records");
  });

  test("a commit the store refuses keeps the records journaled and queued; they land once it works again", async () => {
    const journal = new RecordJournal(join(dir, "j2"));
    const errors: unknown[] = [];
    const writer = new RecordWriter(db, { onError: (e) => errors.push(e), journal, commitIntervalMs: 1 });
    await db.schema.alterTable("call_records").renameTo("call_records_away").execute();
    const ids = ["req_j2_a", "req_j2_b"];
    try {
      for (const id of ids)
        await writer.write(
          callRecord({ request_id: id, account_id: key.account_id, key_id: key.id, prompt_tokens: 1 }),
        );
      await writer.flush(); // gives up after its retries: the store is broken
      assert.ok(errors.length >= 3);
      assert.equal(readdirSync(journal.dir).length, 1, "the journal still holds them");
    } finally {
      await db.schema.alterTable("call_records_away").renameTo("call_records").execute();
    }
    await writer.flush();
    assert.equal(await count(ids), 2);
    assert.deepEqual(readdirSync(journal.dir), []);
  });

  test("replay adds what the store lacks, once", async () => {
    const writer = new RecordWriter(db, { onError: () => {} });
    const present = callRecord({
      request_id: "req_r_1",
      account_id: key.account_id,
      key_id: key.id,
      prompt_tokens: 5,
    });
    await writer.write(present);
    const before = await used();
    const missing = callRecord({
      request_id: "req_r_2",
      account_id: key.account_id,
      key_id: key.id,
      prompt_tokens: 7,
    });
    assert.equal(await writer.replay([present, missing]), 1);
    assert.equal(await writer.replay([present, missing]), 0);
    assert.equal((await used()) - before, 7);
    assert.equal(await count(["req_r_1", "req_r_2"]), 2);
  });
});
