// The records journal in Redis when PostgreSQL goes away (decision 0040): calls answered before
// the outage wait in Redis while their commits fail, their holds keep holding, and once the
// store is back each record is committed once, its hold closed with its charge, and the
// journal emptied. The outage is real: a TCP proxy in front of the server closes every
// connection and refuses new ones.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import OpenAI from "openai";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { journaledRecords, TEST_REDIS_URL } from "./support/redis-instance.ts";
import { until } from "./support/stream-assertions.ts";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.ts";

describe("records journaled in Redis across a PostgreSQL outage", await storeSuite("postgres+redis"), () => {
  let upstream: MockUpstream;
  let proxy: TcpProxy;
  let gw: TestGateway;
  let redis: Redis;
  let prefix: string;

  before(async () => {
    upstream = await startMockUpstream({ promptCount: "template" });
    const admin = new URL(process.env.TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    proxy = await startTcpProxy({ host: admin.hostname, port: Number(admin.port || 5432) });
    gw = await startTestGateway({
      upstream,
      store: "postgres+redis",
      databaseUrl: (url) => {
        const through = new URL(url);
        through.host = `127.0.0.1:${proxy.port}`;
        return through.toString();
      },
      // a commit well after the answer, so the outage comes first
      config: { store: { records_journal: true, records_commit_ms: 500 } },
    });
    prefix = gw.gateway.deps.config.store.redis_prefix;
    redis = new Redis(TEST_REDIS_URL);
  });
  after(async () => {
    redis?.disconnect();
    await proxy?.restore();
    await gw?.close();
    await proxy?.close();
    await upstream?.close();
  });

  const journaled = () => journaledRecords(redis, prefix);

  it("each record is committed once when the store is back, its hold closed with its charge", async () => {
    const account = await gw.account("journal-outage");
    const key = await gw.key(account, { limit: 100_000 });
    const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    const answers = await Promise.all(
      Array.from({ length: 3 }, () =>
        client.chat.completions
          .create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi mock:tokens=3" }] })
          .withResponse(),
      ),
    );
    const ids = answers.map((a) => a.response.headers.get("x-request-id")!);
    assert.equal(new Set(ids).size, 3);

    await proxy.cut();
    assert.deepEqual(await journaled(), [...ids].sort(), "answered, waiting in Redis");
    // the commit comes due and fails (again and again: the writer retries every second)
    await new Promise((r) => setTimeout(r, 1_500));
    assert.deepEqual(await journaled(), [...ids].sort(), "kept while the store is away");
    const held = await gw.ledger("key", key.id);
    assert.ok(held && held.reserved > 0, `the holds still hold: ${JSON.stringify(held)}`);

    await proxy.restore();
    await until(async () => (await journaled()).length === 0, "the journal is emptied", 15_000);
    const { tokens, calls } = await gw.recorded("key_id", key.id);
    assert.equal(calls, 3, "one record each");
    const row = await gw.gateway.deps.store.db
      .selectFrom("api_keys")
      .select("used_tokens")
      .where("id", "=", key.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(row.used_tokens), tokens, "the counter has each charge once");
    assert.deepEqual(await gw.ledger("key", key.id), { used: tokens, reserved: 0 });
  });
});
