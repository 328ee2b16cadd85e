// The Redis connection the shared ledger and rate limits use, and the generation ("epoch") of
// what Redis holds. Every key lives under the current epoch; the epoch names the Redis server
// (its run_id) that holds it. When the epoch key is gone (a flush, a restart without
// persistence) or names another server (a restart from an old snapshot, a failover to a
// replica that may lag), nothing Redis holds is trusted: a new epoch starts, empty, and each
// account, key and bucket is rebuilt from the store the first time a call needs it. The epoch
// also names the format of what it holds (FORMAT): an epoch of another format (an upgrade
// while Redis kept its data) is not trusted either, so no script reads what an older one
// wrote without the fields it now needs.
// While Redis is unreachable, commands fail at once (no offline queue) and callers fail closed;
// the client reconnects by itself.
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { redisDriver } from "./drivers.ts";
import { Reachability } from "./reachability.ts";
import { runScript } from "./redis-script.ts";

/** f2: accounts and keys carry their spending and held money (issue #18) */
const FORMAT = "f2";

// run_id:random:start ms:format
const EPOCH_LUA = `
local cur = redis.call('GET', KEYS[1])
if cur and string.match(cur, '^([^:]+):') == ARGV[1] and string.match(cur, ':([^:]+)$') == ARGV[3] then
  return cur
end
local t = redis.call('TIME')
local new = ARGV[1] .. ':' .. ARGV[2] .. ':' .. t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
  .. ':' .. ARGV[3]
redis.call('SET', KEYS[1], new)
return new`;

/** Redis replies as the scripts return them. */
export type Reply = (string | number | null | Reply[])[];

export class RedisState {
  readonly client: Redis;
  /** a connection in subscriber mode, for wake-ups */
  readonly subscriber: Redis;
  readonly prefix: string;
  readonly channel: string;
  /** whether Redis answers these connections, logged once per change */
  readonly reachability: Reachability;
  readonly #logger: Logger;
  #epoch: string | undefined;
  #runId: string | undefined;
  #changing: Promise<string> | undefined;

  constructor(url: string, prefix: string, logger: Logger) {
    const options = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 2_000,
      connectTimeout: 2_000,
      retryStrategy: (times: number) => Math.min(100 * times, 1_000),
    };
    const { Redis: Client } = redisDriver();
    this.client = new Client(url, options);
    this.subscriber = new Client(url, { ...options, enableOfflineQueue: true });
    this.prefix = prefix;
    this.channel = `${prefix}wake`;
    this.#logger = logger;
    this.reachability = new Reachability("redis", logger, {
      down: "Redis is unreachable: calls are refused (503) until it answers again",
      up: "Redis answers again",
    });
    // ioredis reports each failed reconnection (several a second): the state changes once.
    const parts: [Redis, string][] = [
      [this.client, "commands"],
      [this.subscriber, "wake-ups"],
    ];
    for (const [connection, part] of parts) {
      connection.on("error", (err: Error) => this.reachability.failed(part, err));
      connection.on("ready", () => this.reachability.reached(part));
    }
    this.client.on("ready", () => {
      // Another server (restarted, failed over) may hold other data than the instances wrote:
      // learn its run_id, and start a new epoch if the current one is another server's.
      this.#runId = undefined;
      void this.changed().catch(() => undefined);
    });
  }

  /** The current epoch, as this process last saw it. */
  async epoch(): Promise<string> {
    return this.#epoch ?? this.changed();
  }

  /** When the epoch started, in Redis's clock (ms). */
  static started(epoch: string): number {
    return Number(epoch.split(":")[2]);
  }

  /** A script saw another epoch than this process's: learn it, starting a new one if needed. */
  changed(): Promise<string> {
    this.#changing ??= (async () => {
      try {
        this.#runId ??= /run_id:(\w+)/.exec(await this.client.info("server"))![1]!;
        const previous = this.#epoch;
        const epoch = (await runScript(
          this.client,
          EPOCH_LUA,
          [`${this.prefix}epoch`],
          [this.#runId, randomBytes(6).toString("hex"), FORMAT],
        )) as string;
        if (previous !== undefined && previous !== epoch)
          this.#logger.warn(
            { epoch },
            "Redis lost the shared ledger and rate limits (flush, restart or failover): they are rebuilt from the store",
          );
        this.#epoch = epoch;
        return epoch;
      } finally {
        this.#changing = undefined;
      }
    })();
    return this.#changing;
  }

  /** A key of the current epoch. */
  key(epoch: string, name: string): string {
    return `${this.prefix}${epoch}:${name}`;
  }

  get epochKey(): string {
    return `${this.prefix}epoch`;
  }

  /** Runs a script, under the current epoch (its first KEYS and ARGV); retried once the epoch changed. */
  async run(
    lua: string,
    build: (epoch: string) => { keys: string[]; args: (string | number)[] },
  ): Promise<Reply> {
    for (let attempt = 0; ; attempt++) {
      const epoch = await this.epoch();
      const { keys, args } = build(epoch);
      const reply = (await runScript(this.client, lua, [this.epochKey, ...keys], [epoch, ...args])) as Reply;
      if (reply[0] !== "epoch" || attempt >= 3) return reply;
      if (reply[1] === epoch) continue;
      await this.changed();
    }
  }

  /**
   * Resolves once both connections are up, or after `timeoutMs` whatever their state: an
   * instance whose Redis answers must not refuse its first calls (503) while it connects, and
   * one whose Redis is down starts anyway, refusing calls until it answers.
   */
  async connected(timeoutMs: number): Promise<boolean> {
    const up = (c: Redis) =>
      c.status === "ready"
        ? Promise.resolve()
        : new Promise<void>((resolve) => c.once("ready", () => resolve()));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([Promise.all([up(this.client), up(this.subscriber)]).then(() => true), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
    this.subscriber.disconnect();
  }
}

/**
 * Every script starts by checking the epoch: KEYS[1] the epoch key, ARGV[1] the caller's epoch.
 * Redis's clock (ms) is a function, asked by the scripts that need it: a hold or a close
 * without waiters or seeding reads no time, and each command a script calls costs Redis more
 * in Lua's bridge than in the command (decision 0045).
 */
export const CHECK_EPOCH = `
local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[1] then return {'epoch', cur or ''} end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;
