// A hold's journal row on PostgreSQL with Redis goes to the store while its call goes upstream
// (decision 0043): the answer waits for the row, and a row that lands later than the ledger's
// deadline (1 s) refuses the call with ledger_unavailable, charged nothing, whatever the
// upstream answered. The store is made slow for real: a transaction locks the rows' table.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { sql } from "kysely";
import OpenAI from "openai";
import pg from "pg";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { until } from "./support/stream-assertions.ts";

describe("a hold journaled while its call goes upstream", await storeSuite("postgres+redis"), () => {
  let upstream: MockUpstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await startMockUpstream({ promptCount: "template" });
    gw = await startTestGateway({ upstream, store: "postgres+redis" });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  /** Holds every hold's row back until the function it returns is called. */
  async function blockRows(): Promise<() => Promise<void>> {
    const locker = new pg.Client({ connectionString: gw.gateway.deps.config.store.database_url! });
    await locker.connect();
    await locker.query("begin");
    await locker.query("lock table ledger_reservations in exclusive mode");
    return async () => {
      try {
        await locker.query("commit");
      } finally {
        await locker.end();
      }
    };
  }

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  const holdRows = async (keyId: string) =>
    Number(
      (
        await gw.gateway.deps.store.db
          .selectFrom("ledger_reservations")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("key_id", "=", keyId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  it("the upstream is asked before the row lands, and the answer comes once it has", async () => {
    const account = await gw.account("hold-behind");
    const key = await gw.key(account, { limit: 100_000 });
    const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    upstream.reset();
    const unblock = await blockRows();
    const call = client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi mock:tokens=3" }] })
      .withResponse();
    try {
      let answered = false;
      call.then(
        () => {
          answered = true;
        },
        () => undefined,
      );
      await until(async () => upstream.requests.length === 1, "the upstream is asked meanwhile", 5_000);
      await sleep(150); // the mock has answered by now
      assert.equal(answered, false, "the answer waits for its hold's row");
      // on the hold journal's own connections, named so an operator tells them from the store's
      const waiting = await sql<{ application_name: string }>`select application_name from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
          and query like 'insert into ledger_reservations%'`.execute(gw.gateway.deps.store.db);
      assert.deepEqual(
        waiting.rows.map((r) => r.application_name),
        ["chat-gateway holds"],
      );
    } finally {
      await unblock();
    }
    const answer = await call;
    assert.ok(answer.data.choices[0]?.message.content);
    const record = await gw.record(answer.response.headers.get("x-request-id")!);
    assert.equal(record.status, "ok");
    assert.equal(record.total_tokens, answer.data.usage?.total_tokens);
    await until(
      async () => (await gw.ledger("key", key.id))?.reserved === 0,
      "the hold closes with its charge",
      5_000,
    );
    assert.deepEqual(await gw.ledger("key", key.id), { used: record.total_tokens, reserved: 0 });
  });

  it("a row that lands after the deadline refuses the call, JSON and stream, and charges nothing", async () => {
    const account = await gw.account("hold-late");
    const key = await gw.key(account, { limit: 100_000 });
    const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    upstream.reset();
    const messages = [{ role: "user" as const, content: "hi mock:tokens=3" }];
    const unblock = await blockRows();
    const settled = Promise.allSettled([
      client.chat.completions.create({ model: TEST_MODEL, messages }),
      client.chat.completions.create({ model: TEST_MODEL, messages, stream: true }).then(async (s) => {
        for await (const _ of s);
      }),
    ]);
    try {
      await until(async () => upstream.requests.length === 2, "both are asked upstream", 5_000);
      // the holds were asked for before their calls went upstream: past their rows' deadline (1 s)
      await sleep(1_200);
    } finally {
      await unblock();
    }
    const [json, stream] = await settled;
    assert.equal(upstream.requests.length, 2, "both were asked upstream while their rows waited");
    for (const settled of [json, stream]) {
      assert.equal(settled?.status, "rejected");
      const err = (settled as PromiseRejectedResult).reason;
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.equal(err.status, 503);
      assert.equal((err.error as { code?: string }).code, "ledger_unavailable");
    }
    const { tokens, calls } = await gw.recorded("key_id", key.id);
    assert.deepEqual({ tokens, calls }, { tokens: 0, calls: 2 }, "recorded, charged nothing");
    await until(async () => (await holdRows(key.id)) === 0, "no row of the holds is left", 5_000);
    assert.deepEqual(await gw.ledger("key", key.id), { used: 0, reserved: 0 });
  });
});
