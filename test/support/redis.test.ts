// The Redis test helper: a key prefix per test, cleanup that removes that test's keys only, and
// the commands Redis runs, read from MONITOR.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestRedis, needsRedis, parseMonitorLine, watchRedisCommands } from "./redis.ts";
import { until } from "./stream-assertions.ts";

describe("Redis test helper", await needsRedis(), () => {
  test("each test gets its own prefix; cleanup deletes its keys and no one else's", async () => {
    const a = await createTestRedis();
    const b = await createTestRedis();
    try {
      assert.notEqual(a.prefix, b.prefix);
      await a.client.set(a.key("one"), "1");
      await a.client.set(a.key("two"), "2");
      await b.client.set(b.key("one"), "other test's");
      await a.cleanup();
      assert.equal(await b.client.exists(a.key("one"), a.key("two")), 0, "a's keys are gone");
      assert.equal(await b.client.get(b.key("one")), "other test's", "b's key is still there");
    } finally {
      await b.cleanup();
    }
  });

  test("MONITOR's lines come back as the commands sent, quotes, escapes and scripts' calls included", async () => {
    const r = await createTestRedis();
    const key = r.key("watched");
    const value = 'a "quoted"\\ line\nand \x01 a byte, and é';
    const { seen, stop } = await watchRedisCommands((args) => args.some((a) => a.startsWith(r.prefix)));
    try {
      await r.client.set(key, value);
      await r.client.eval("return redis.call('get', KEYS[1])", 1, key);
      await until(() => seen.some((args) => args[0] === "get"), "the script's call is logged", 5_000);
    } finally {
      stop();
      await r.cleanup();
    }
    assert.deepEqual(seen[0], ["set", key, value]);
    assert.deepEqual(seen.at(-1), ["get", key]);
    assert.equal(seen.length, 3, "set, eval and the script's get");
  });
});

describe("MONITOR's lines", () => {
  test("a line logged by another client, or by a script, reads as its source and its command", () => {
    assert.deepEqual(parseMonitorLine('+1795817082.321094 [0 127.0.0.1:56804] "info"'), {
      source: "127.0.0.1:56804",
      args: ["info"],
    });
    assert.deepEqual(parseMonitorLine('+1795817082.321094 [0 lua] "hincrby" "k" "u" "\\x2d5"'), {
      source: "lua",
      args: ["hincrby", "k", "u", "-5"],
    });
    assert.equal(parseMonitorLine("+OK"), undefined);
  });
});
