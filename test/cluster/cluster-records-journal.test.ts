// The records journal on PostgreSQL with Redis (decision 0040), across two gateway processes:
// an answer does not wait for its record's commit, and its hold keeps holding until the commit
// lands; an instance killed with records journaled and not committed loses none, as the other
// instance's sweep commits them with their charges; Redis losing its state with records
// journaled loses none either, and the new epoch's books come out equal to the store's.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { chat } from "../support/chat-call.ts";
import { type Cluster, startCluster } from "../support/cluster.ts";
import { type MockUpstream, startMockUpstream } from "../support/mock-openai-upstream.ts";
import { dropRedisKeys, journaledRecords, needsRedis } from "../support/redis-instance.ts";
import { until } from "../support/stream-assertions.ts";

/** long enough that a check right after an answer comes before its commit */
const COMMIT_MS = 1_000;

describe("the records journal in Redis (two instances)", await needsRedis(), () => {
  let upstream: MockUpstream;
  let cluster: Cluster;
  let redis: Redis;

  before(async () => {
    upstream = await startMockUpstream({ promptCount: "template" });
    cluster = await startCluster({
      instances: 2,
      upstream,
      redis: true,
      config: { store: { records_journal: true, records_commit_ms: COMMIT_MS }, ledger: { lease_ms: 1_000 } },
    });
    redis = new Redis(cluster.redis!.url);
  });
  after(async () => {
    redis?.disconnect();
    await cluster?.close();
    await upstream?.close();
  });

  /** The record of a request in the store, or undefined. */
  const record = (requestId: string) =>
    cluster.store.db
      .selectFrom("call_records")
      .select(["request_id", "total_tokens", "key_id"])
      .where("request_id", "=", requestId)
      .executeTakeFirst();
  const keyUsed = async (keyId: string) =>
    Number(
      (
        await cluster.store.db
          .selectFrom("api_keys")
          .select("used_tokens")
          .where("id", "=", keyId)
          .executeTakeFirstOrThrow()
      ).used_tokens,
    );
  /**
   * A key's consumption and holds in Redis's current epoch, read from Redis itself: the test's
   * own view of the ledger learns a new epoch only when one of its scripts meets it.
   */
  const inRedis = async (keyId: string) => {
    const epoch = await redis.get(`${cluster.redis!.prefix}epoch`);
    const [u, r] = await redis.hmget(`${cluster.redis!.prefix}${epoch}:s:k:${keyId}`, "u", "r");
    return u === null ? undefined : { used: Number(u), reserved: Number(r) };
  };
  /** the journals' entries in Redis, every instance's */
  const journaled = () => journaledRecords(redis, cluster.redis!.prefix);

  it("an answer does not wait for its record's commit; its hold closes with its charge once it lands", async () => {
    const account = await cluster.target.account("journal-answer");
    const key = await cluster.target.key(account, { limit: 100_000 });
    const answer = await chat(cluster.instances[0]!.baseURL, key.secret);
    assert.equal(answer.status, 200);
    const id = answer.requestId!;

    assert.equal(await record(id), undefined, "answered before its commit");
    assert.deepEqual(await journaled(), [id], "the record waits in Redis");
    const held = await cluster.target.books.counter("key", key.id);
    assert.ok(held && held.reserved > 0 && held.used === 0, `the hold still holds: ${JSON.stringify(held)}`);

    await until(async () => (await record(id)) !== undefined, "the record is committed", 10_000);
    const tokens = Number((await record(id))!.total_tokens);
    assert.ok(tokens > 0);
    await until(
      async () => (await cluster.target.books.counter("key", key.id))?.reserved === 0,
      "the hold closes",
      5_000,
    );
    assert.deepEqual(await cluster.target.books.counter("key", key.id), { used: tokens, reserved: 0 });
    assert.equal(await keyUsed(key.id), tokens);
    assert.deepEqual(await journaled(), [], "the committed record left Redis");
  });

  it("kill -9 before the commit: the other instance's sweep commits the record, charged", async () => {
    const account = await cluster.target.account("journal-kill");
    const key = await cluster.target.key(account, { limit: 100_000 });
    const victim = cluster.instances[0]!;
    const answer = await chat(victim.baseURL, key.secret);
    assert.equal(answer.status, 200);
    await victim.kill();
    const id = answer.requestId!;
    assert.equal(await record(id), undefined, "killed before its commit");
    assert.deepEqual(await journaled(), [id]);

    await until(async () => (await record(id)) !== undefined, "the sweep commits the record", 20_000);
    await until(async () => (await cluster.target.books.openHolds()) === 0, "every hold closed", 10_000);
    const tokens = Number((await record(id))!.total_tokens);
    assert.ok(tokens > 0, "charged what it answered");
    assert.equal(await keyUsed(key.id), tokens, "the counter has its charge, once");
    assert.deepEqual(await cluster.target.books.counter("key", key.id), { used: tokens, reserved: 0 });
    assert.deepEqual(await journaled(), [], "nothing left in Redis");
  });

  it("Redis loses its state before the commit: the record is committed and the new epoch's books agree", async () => {
    const account = await cluster.target.account("journal-flush");
    const key = await cluster.target.key(account, { limit: 100_000 });
    const survivor = cluster.instances[1]!;
    const first = await chat(survivor.baseURL, key.secret);
    assert.equal(first.status, 200);
    await dropRedisKeys(cluster.redis!.url, cluster.redis!.prefix);
    // a call while the first record waits: the new epoch's seed counts its hold, held
    const second = await chat(survivor.baseURL, key.secret);
    assert.equal(second.status, 200);

    await until(
      async () =>
        (await record(first.requestId!)) !== undefined && (await record(second.requestId!)) !== undefined,
      "both records are committed",
      10_000,
    );
    await until(async () => (await inRedis(key.id))?.reserved === 0, "both holds close", 5_000);
    const tokens =
      Number((await record(first.requestId!))!.total_tokens) +
      Number((await record(second.requestId!))!.total_tokens);
    assert.equal(await keyUsed(key.id), tokens);
    assert.deepEqual(
      await inRedis(key.id),
      { used: tokens, reserved: 0 },
      "the new epoch agrees with the store",
    );
  });
});
