// RedisState's start: up once Redis answers, or on its own after a bound when it does not.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { freePort } from "../../test/support/listen.ts";
import { needsRedis, TEST_REDIS_URL } from "../../test/support/redis.ts";
import { createLogger } from "../observability/logger.ts";
import { RedisState } from "./redis-state.ts";

const logger = createLogger("silent");

describe("RedisState.connected", await needsRedis(), () => {
  test("true once both connections answer", async () => {
    const state = new RedisState(TEST_REDIS_URL, "test:connected:", logger);
    try {
      assert.equal(await state.connected(5_000), true);
      assert.equal(state.client.status, "ready");
      assert.equal(state.subscriber.status, "ready");
    } finally {
      await state.close();
    }
  });

  test("false after the bound when nothing answers", async () => {
    const state = new RedisState(`redis://127.0.0.1:${await freePort()}`, "test:connected:", logger);
    state.client.on("error", () => {}); // connection refused, as expected
    try {
      assert.equal(await state.connected(300), false);
      assert.notEqual(state.client.status, "ready");
    } finally {
      await state.close();
    }
  });
});
