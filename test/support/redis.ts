// Redis for the suites that use it, on 127.0.0.1:6379 (TEST_REDIS_URL overrides). Each test
// gets its own key prefix and removes its keys afterwards, so suites running side by side on
// one server never see each other's keys. Suites pass `await needsRedis()` to describe().
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { connect } from "node:net";
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

export interface CommandWatch {
  /** each command kept, as Redis logged it: its name first, then its arguments */
  seen: string[][];
  stop(): void;
}

/**
 * The commands Redis runs that `keep` takes, from MONITOR, until stop(). `source` is the
 * client's address, or "lua" for a command a script called.
 *
 * A bare socket, not ioredis's monitor(): ioredis marks its connection as monitoring a tick
 * after MONITOR's +OK, so a command of another client logged in the same packet as the +OK
 * was taken as a reply nobody asked for, and its error left the connection reconnecting and
 * the test waiting forever.
 */
export async function watchRedisCommands(
  keep: (args: string[], source: string) => boolean,
): Promise<CommandWatch> {
  const url = new URL(TEST_REDIS_URL);
  const socket = connect(Number(url.port || 6379), url.hostname);
  socket.setEncoding("latin1"); // MONITOR escapes every byte outside printable ASCII
  await once(socket, "connect");
  const seen: string[][] = [];
  const ready = Promise.withResolvers<void>();
  const password = decodeURIComponent(url.password);
  let replies = password ? 2 : 1; // AUTH's +OK, then MONITOR's; the feed follows
  let pending = "";
  socket.on("data", (chunk: string) => {
    pending += chunk;
    let end = pending.indexOf("\r\n");
    while (end >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      end = pending.indexOf("\r\n");
      if (line.startsWith("-")) ready.reject(new Error(`Redis refused MONITOR: ${line.slice(1)}`));
      else if (replies > 0) {
        if (--replies === 0) ready.resolve();
      } else {
        const logged = parseMonitorLine(line);
        if (logged && keep(logged.args, logged.source)) seen.push(logged.args);
      }
    }
  });
  socket.on("error", (error) => ready.reject(error));
  if (password)
    socket.write(
      command(url.username ? ["AUTH", decodeURIComponent(url.username), password] : ["AUTH", password]),
    );
  socket.write(command(["MONITOR"]));
  try {
    await ready.promise;
  } catch (error) {
    socket.destroy();
    throw error;
  }
  return { seen, stop: () => socket.destroy() };
}

/** One command in RESP, as a client sends it. */
function command(args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`;
}

/** `+1795817082.321094 [0 127.0.0.1:56804] "set" "k" "a \"b\""`, as Redis logs a command. */
export function parseMonitorLine(line: string): { source: string; args: string[] } | undefined {
  const head = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] /.exec(line);
  if (!head) return undefined;
  const args: string[] = [];
  for (const quoted of line.slice(head[0].length).matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    // the escapes give bytes, one character each: read back as the UTF-8 the client sent
    const bytes = quoted[1]!.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, e: string) =>
      e.length === 3 ? String.fromCharCode(Number.parseInt(e.slice(1), 16)) : (ESCAPES[e] ?? e),
    );
    args.push(Buffer.from(bytes, "latin1").toString("utf8"));
  }
  return { source: head[1]!, args };
}

const ESCAPES: Record<string, string> = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" };
