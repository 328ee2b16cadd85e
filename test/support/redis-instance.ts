// Redis for the suites that share the ledger through it: the machine's server on
// 127.0.0.1:6379 (TEST_REDIS_URL overrides), each gateway under its own key prefix, removed
// afterwards; and, for tests that stop and restart Redis, a redis-server of their own on a
// free port (never the shared one).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { Redis } from "ioredis";
import { journalHash } from "../../src/records/redis-journal.ts";
import { freePort } from "./listen.ts";

// One check of the shared server, in ./redis.ts; this file adds what the ledger's suites need.
export { needsRedis, TEST_REDIS_URL } from "./redis.ts";

const QUICK = {
  lazyConnect: true,
  connectTimeout: 2_000,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
};

/** A key prefix of its own, e.g. "test:3f9a…:". */
export function redisPrefix(): string {
  return `test:${randomBytes(6).toString("hex")}:`;
}

/** Deletes every key under the prefix. */
export async function dropRedisKeys(url: string, prefix: string): Promise<void> {
  const client = new Redis(url, QUICK);
  client.on("error", () => {});
  try {
    await client.connect();
    let cursor = "0";
    do {
      const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      if (keys.length) await client.unlink(...keys);
      cursor = next;
    } while (cursor !== "0");
  } catch {
    // a server already gone has no keys left to remove
  } finally {
    client.disconnect();
  }
}

/** The request ids of the call records every instance under the prefix has journaled in Redis and not committed yet. */
export async function journaledRecords(client: Redis, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (const hash of await client.keys(journalHash(prefix, "*"))) ids.push(...(await client.hkeys(hash)));
  return ids.sort();
}

/** Flushes what a gateway keeps under its prefix, as FLUSHALL would for it alone. */
export const flushRedisKeys = dropRedisKeys;

export interface RedisServer {
  url: string;
  /** stops the server (SIGTERM, nothing saved) */
  stop(): Promise<void>;
  /** starts it again on the same port, empty */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** A redis-server of the test's own, without persistence, on a free port. */
export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ReturnType<typeof spawn> | undefined;
  const start = async () => {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    for (let i = 0; i < 100; i++) {
      const client = new Redis(url, QUICK);
      client.on("error", () => {});
      try {
        await client.connect();
        if ((await client.ping()) === "PONG") return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      } finally {
        client.disconnect();
      }
    }
    throw new Error(`redis-server did not start on port ${port}`);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    const exited = once(c, "exit");
    c.kill("SIGTERM");
    await exited;
  };
  await start();
  return { url, start, stop, close: stop };
}
