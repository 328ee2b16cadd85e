// Redis for the suites that use it, on 127.0.0.1:6379 (TEST_REDIS_URL overrides). Each test
// gets its own key prefix and removes its keys afterwards, so suites running side by side on
// one server never see each other's keys. Suites pass `await needsRedis()` to describe().
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { type SuiteOptions, suiteNeeding } from "./services.ts";

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** Fail at once rather than retry: a test needs the server now. */
const OPTIONS = {
  lazyConnect: true,
  connectTimeout: 3_000,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
};

let reachable: Promise<boolean> | undefined;

/** Runs the suite where Redis answers; elsewhere one line says it did not (CI=true: it fails). */
export async function needsRedis(): Promise<SuiteOptions> {
  reachable ??= (async () => {
    const client = new Redis(TEST_REDIS_URL, OPTIONS);
    client.on("error", () => {}); // reported as unreachable below
    try {
      await client.connect();
      return (await client.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  })();
  const url = new URL(TEST_REDIS_URL);
  return suiteNeeding("Redis", `${url.hostname}:${url.port || 6379}`, await reachable);
}

export interface TestRedis {
  url: string;
  /** every key of this test starts with it, e.g. "test:3f9a…:" */
  prefix: string;
  /** a client for the test's own checks */
  client: Redis;
  /** prefix + name */
  key(name: string): string;
  /** deletes the test's keys and closes the client */
  cleanup(): Promise<void>;
}

export async function createTestRedis(): Promise<TestRedis> {
  const prefix = `test:${randomBytes(6).toString("hex")}:`;
  const client = new Redis(TEST_REDIS_URL, OPTIONS);
  await client.connect();
  return {
    url: TEST_REDIS_URL,
    prefix,
    client,
    key: (name) => prefix + name,
    async cleanup() {
      try {
        let cursor = "0";
        do {
          const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
          if (keys.length) await client.unlink(...keys);
          cursor = next;
        } while (cursor !== "0");
      } finally {
        client.disconnect();
      }
    },
  };
}
