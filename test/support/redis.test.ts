// The Redis test helper: a key prefix per test, and cleanup that removes that test's keys only.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createTestRedis, needsRedis } from "./redis.ts";

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
});
