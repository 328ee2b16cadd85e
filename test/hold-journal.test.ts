// A hold's journal row on PostgreSQL with Redis goes to the store while its call goes upstream
// (decision 0043): the answer waits for the row, and a row that lands later than the ledger's
// deadline (1 s) refuses the call with ledger_unavailable, charged nothing, whatever the
// upstream answered. The store is made slow for real: a transaction locks the rows' table.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
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

  /** Runs `during` while the holds' rows cannot land, then lets them after `ms` in all. */
  async function withRowsBlocked<T>(ms: number, during: () => Promise<T>): Promise<T> {
    const locker = new pg.Client({ connectionString: gw.gateway.deps.config.store.database_url! });
    await locker.connect();
    try {
      await locker.query("begin");
      await locker.query("lock table ledger_reservations in exclusive mode");
      const started = performance.now();
      const running = during();
      running.catch(() => undefined);
      const wait = ms - (performance.now() - started);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      await locker.query("commit");
      return await running;
    } finally {
      await locker.end();
    }
  }

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
    const answer = await withRowsBlocked(300, async () => {
      const call = client.chat.completions
        .create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi mock:tokens=3" }] })
        .withResponse();
      let answered = false;
      void call.then(() => {
        answered = true;
      });
      await until(async () => upstream.requests.length === 1, "the upstream is asked meanwhile", 5_000);
      await new Promise((r) => setTimeout(r, 150)); // the mock has answered by now
      assert.equal(answered, false, "the answer waits for its hold's row");
      return call;
    });
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
    const [json, stream] = await withRowsBlocked(1_400, () =>
      Promise.allSettled([
        client.chat.completions.create({ model: TEST_MODEL, messages }),
        client.chat.completions.create({ model: TEST_MODEL, messages, stream: true }).then(async (s) => {
          for await (const _ of s);
        }),
      ]),
    );
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
