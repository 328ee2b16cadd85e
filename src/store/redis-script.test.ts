// Scripts run by their SHA1 on a Redis server of the test's own (its script cache and command
// counts are the test's alone): sent whole once per server, by hash after that, sent whole
// again after the server lost its scripts; a script's own error is not retried.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Redis } from "ioredis";
import { needsRedis, type RedisServer, startRedisServer } from "../../test/support/redis-instance.ts";
import { runScript } from "./redis-script.ts";

const ECHO = "return {KEYS[1], ARGV[1], ARGV[2]}";

describe("Lua scripts by SHA1", await needsRedis(), () => {
  let server: RedisServer;
  let client: Redis;
  before(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
  });
  after(async () => {
    client?.disconnect();
    await server?.close();
  });

  /** How many times Redis ran each of EVAL and EVALSHA, failed ones included. */
  async function calls(): Promise<{ eval: number; evalsha: number }> {
    const stats = await client.info("commandstats");
    const count = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return { eval: count("eval"), evalsha: count("evalsha") };
  }

  test("sent whole once, then by its hash; sent again once the server lost it", async () => {
    assert.deepEqual(await runScript(client, ECHO, ["k"], ["a", 1]), ["k", "a", "1"]);
    assert.deepEqual(await calls(), { eval: 1, evalsha: 1 }, "NOSCRIPT, then the text");
    for (let n = 0; n < 3; n++)
      assert.deepEqual(await runScript(client, ECHO, ["k"], [n, "b"]), ["k", String(n), "b"]);
    assert.deepEqual(await calls(), { eval: 1, evalsha: 4 });
    await client.script("FLUSH");
    assert.deepEqual(await runScript(client, ECHO, ["k2"], ["c", 2]), ["k2", "c", "2"]);
    assert.deepEqual(await calls(), { eval: 2, evalsha: 5 });
  });

  test("a script's own error reaches the caller, without a retry", async () => {
    const before = await calls();
    await assert.rejects(runScript(client, "return redis.error_reply('mine')", [], []), /mine/);
    await assert.rejects(runScript(client, "return redis.error_reply('mine')", [], []), /mine/);
    const now = await calls();
    assert.equal(now.eval - before.eval, 1, "sent whole for the first call only");
    assert.equal(now.evalsha - before.evalsha, 2);
  });
});
