// The shared cooldown store against the real Redis (127.0.0.1:6379), each test under a key
// prefix of its own, removed afterwards.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import { needsRedis, TEST_REDIS_URL } from "../../test/support/redis.ts";
import { until } from "../../test/support/stream-assertions.ts";
import type { Cooldown } from "./cooldowns.ts";
import { RedisCooldowns } from "./redis-cooldowns.ts";

const URL = TEST_REDIS_URL;
const SETTINGS = { failures: 2, windowMs: 60_000, ms: 30_000 };
const admin = new Redis(URL);
const prefixes: string[] = [];

after(async () => {
  for (const prefix of prefixes) {
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length) await admin.del(...keys);
  }
  await admin.quit();
});

async function stores(count: number, settings = SETTINGS) {
  const prefix = `gw-test-${randomUUID()}:`;
  prefixes.push(prefix);
  const started: { store: RedisCooldowns; cooled: [string, Cooldown][]; errors: unknown[] }[] = [];
  for (let i = 0; i < count; i++) {
    const cooled: [string, Cooldown][] = [];
    const errors: unknown[] = [];
    const store = new RedisCooldowns({
      url: URL,
      prefix,
      settings,
      onCoolDown: (d, c) => cooled.push([d, c]),
      onError: (err) => errors.push(err),
    });
    await store.start();
    started.push({ store, cooled, errors });
  }
  return { prefix, stores: started, close: () => Promise.all(started.map((s) => s.store.close())) };
}

describe("RedisCooldowns", await needsRedis(), () => {
  test("failures add up across instances; the cooldown reaches every instance", async () => {
    const {
      stores: [one, two],
      close,
    } = await stores(2);
    try {
      await one!.store.fail("p/m");
      assert.equal(one!.store.get("p/m"), undefined);
      await two!.store.fail("p/m");
      assert.equal(two!.store.get("p/m")?.reason, "failures", "the second instance's failure was the 2nd");
      assert.equal(two!.cooled.length, 1, "the instance that started it tells its metrics");
      await until(() => one!.store.get("p/m") !== undefined, "the other instance hears of the cooldown");
      assert.deepEqual(one!.store.get("p/m"), two!.store.get("p/m"));
      assert.equal(one!.cooled.length, 0, "heard, not started here");
      assert.deepEqual([...one!.errors, ...two!.errors], []);
    } finally {
      await close();
    }
  });

  test("one probe among all instances; its verdict reaches every instance", async () => {
    const {
      stores: [one, two],
      close,
    } = await stores(2);
    try {
      await one!.store.coolDown("p/m", 0, "rate_limited");
      await until(() => two!.store.get("p/m") !== undefined, "the cooldown reaches the other instance");
      const taken = await Promise.all([one!.store.takeProbe("p/m"), two!.store.takeProbe("p/m")]);
      assert.deepEqual(taken.sort(), [false, true]);
      const prober = taken[0] ? one! : two!;
      const other = taken[0] ? two! : one!;
      assert.equal(other.store.probing("p/m"), true, "the loser does not ask again at once");
      await prober.store.recovered("p/m");
      assert.equal(prober.store.get("p/m"), undefined);
      await until(() => other.store.get("p/m") === undefined, "the other instance hears it is back");
      assert.equal(other.store.probing("p/m"), false);
    } finally {
      await close();
    }
  });

  test("an instance started later reads the cooldowns in force", async () => {
    const first = await stores(1);
    try {
      await first.stores[0]!.store.coolDown("p/m", 20_000, "rate_limited");
      const late = new RedisCooldowns({
        url: URL,
        prefix: first.prefix,
        settings: SETTINGS,
        onError: () => {},
      });
      await late.start();
      try {
        assert.equal(late.get("p/m")?.reason, "rate_limited");
      } finally {
        await late.close();
      }
    } finally {
      await first.close();
    }
  });

  test("Redis unreachable: this instance's own view, and no call fails", async () => {
    const errors: unknown[] = [];
    const cooled: string[] = [];
    const store = new RedisCooldowns({
      url: "redis://127.0.0.1:1",
      prefix: "gw-test-unreachable:",
      settings: SETTINGS,
      onCoolDown: (d) => cooled.push(d),
      onError: (err) => errors.push(err),
    });
    await store.start();
    try {
      await store.fail("p/m");
      await store.fail("p/m");
      assert.equal(store.get("p/m")?.reason, "failures", "counted here");
      assert.deepEqual(cooled, ["p/m"]);
      assert.equal(await store.takeProbe("p/m"), true);
      await store.recovered("p/m");
      assert.equal(store.get("p/m"), undefined);
      assert.ok(errors.length > 0, "the errors were reported");
    } finally {
      await store.close();
    }
  });
});
