// Cooldowns shared by every instance through Redis (store.redis_url / REDIS_URL). Failures
// are counted in one sorted set per deployment, so `failures` within the window means across
// all instances; a cooldown is one key, announced on a channel so every instance's local
// copy (what routing reads, without a round trip) follows within a moment; the probe after a
// cooldown is one SET NX, so one call of all the instances probes.
//
// Redis unreachable: calls are routed on this instance's own knowledge (failures it counted,
// cooldowns it started) until it is back; a call never fails because of Redis.
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { redisDriver } from "../store/drivers.ts";
import { runScript } from "../store/redis-script.ts";
import {
  type Cooldown,
  type CooldownListener,
  type CooldownReason,
  type CooldownSettings,
  type CooldownStore,
  FailureWindow,
} from "./cooldowns.ts";

/** A cooldown key outlives its end by this much, for the probe; an idle deployment's then simply expires. */
const PROBE_GRACE_MS = 60 * 60_000;
/** After another instance's probe won, how long this one does not ask again. */
const PROBE_BUSY_MS = 1_000;

/**
 * Adds a failure and trims the window; at the threshold, starts the cooldown (clearing the
 * count and any probe) and announces it. KEYS: failures, cooldown, probe.
 * ARGV: now, window ms, threshold, member, cooldown value, cooldown ttl ms, channel, message.
 */
const FAIL_SCRIPT = `
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[1], KEYS[3])
  redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[6])
  redis.call('PUBLISH', ARGV[7], ARGV[8])
  return {n, 1}
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {n, 0}
`;

interface Announcement {
  deployment: string;
  cooldown: Cooldown | null;
}

export interface RedisCooldownOptions {
  url: string;
  /** prefix of every key (store.redis_prefix) */
  prefix: string;
  settings: CooldownSettings;
  onCoolDown?: CooldownListener;
  /** Redis errors: logged, never thrown into a call */
  onError: (err: unknown) => void;
}

export class RedisCooldowns implements CooldownStore {
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #prefix: string;
  readonly #channel: string;
  readonly #settings: CooldownSettings;
  readonly #onCoolDown: CooldownListener;
  readonly #onError: (err: unknown) => void;
  readonly #cooldowns = new Map<string, Cooldown>();
  /** probes this instance holds */
  readonly #probes = new Set<string>();
  /** probes another instance holds, as last seen: deployment -> until when not to ask */
  readonly #busy = new Map<string, number>();
  /** this instance's own failures: the fallback while Redis is unreachable */
  readonly #window: FailureWindow;
  /** the shared count Redis last answered, and when */
  readonly #shared = new Map<string, { count: number; at: number }>();
  #member = 0;
  /** members of the failure window must be unique across stores, also two in one process */
  readonly #instance = randomUUID();

  constructor(options: RedisCooldownOptions) {
    const connection = {
      lazyConnect: true,
      // A command while disconnected fails at once instead of queueing behind a call.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 1_000,
    };
    const { Redis: Client } = redisDriver();
    this.#redis = new Client(options.url, connection);
    this.#subscriber = new Client(options.url, { ...connection, enableOfflineQueue: true });
    this.#prefix = `${options.prefix}routing:`;
    this.#channel = `${this.#prefix}cooldowns`;
    this.#settings = options.settings;
    this.#onCoolDown = options.onCoolDown ?? (() => {});
    this.#onError = options.onError;
    this.#window = new FailureWindow(options.settings.windowMs);
    for (const connection of [this.#redis, this.#subscriber]) connection.on("error", options.onError);
    this.#subscriber.on("message", (_channel: string, message: string) => this.#heard(message));
  }

  /** Connects, listens for other instances' cooldowns and reads the ones in force. */
  async start(): Promise<void> {
    try {
      await Promise.all([this.#redis.connect(), this.#subscriber.connect()]);
      await this.#subscriber.subscribe(this.#channel);
      await this.#load();
    } catch (err) {
      this.#onError(err);
    }
    // After a reconnect, announcements made meanwhile are lost: read the cooldowns again.
    this.#subscriber.on("ready", () => void this.#load().catch(this.#onError));
  }

  get(deployment: string): Cooldown | undefined {
    return this.#cooldowns.get(deployment);
  }

  probing(deployment: string): boolean {
    if (this.#probes.has(deployment)) return true;
    const busy = this.#busy.get(deployment);
    return busy !== undefined && busy > Date.now();
  }

  failures(deployment: string): number {
    const now = Date.now();
    const shared = this.#shared.get(deployment);
    const sharedCount = shared && shared.at > now - this.#settings.windowMs ? shared.count : 0;
    return Math.max(sharedCount, this.#window.count(deployment, now));
  }

  async fail(deployment: string): Promise<void> {
    const now = Date.now();
    const local = this.#window.add(deployment, now);
    const cooldown: Cooldown = { until: now + this.#settings.ms, reason: "failures" };
    try {
      const [count, started] = (await runScript(
        this.#redis,
        FAIL_SCRIPT,
        [
          this.#key("failures", deployment),
          this.#key("cooldown", deployment),
          this.#key("probe", deployment),
        ],
        [
          now,
          this.#settings.windowMs,
          this.#settings.failures,
          `${now}-${this.#instance}-${++this.#member}`,
          JSON.stringify(cooldown),
          this.#settings.ms + PROBE_GRACE_MS,
          this.#channel,
          this.#announcement(deployment, cooldown),
        ],
      )) as [number, number];
      this.#shared.set(deployment, { count, at: now });
      if (started) this.#started(deployment, cooldown);
    } catch (err) {
      this.#onError(err);
      if (local >= this.#settings.failures) this.#started(deployment, cooldown);
    }
  }

  async coolDown(deployment: string, ms: number, reason: CooldownReason): Promise<void> {
    const cooldown: Cooldown = { until: Date.now() + ms, reason };
    this.#started(deployment, cooldown);
    await this.#run(
      this.#redis
        .multi()
        .set(this.#key("cooldown", deployment), JSON.stringify(cooldown), "PX", ms + PROBE_GRACE_MS)
        .del(this.#key("failures", deployment), this.#key("probe", deployment))
        .publish(this.#channel, this.#announcement(deployment, cooldown))
        .exec(),
    );
  }

  async takeProbe(deployment: string): Promise<boolean> {
    if (this.probing(deployment)) return false;
    this.#probes.add(deployment);
    try {
      const taken = await this.#redis.set(this.#key("probe", deployment), "1", "PX", this.#settings.ms, "NX");
      if (taken === "OK") return true;
      this.#probes.delete(deployment);
      this.#busy.set(deployment, Date.now() + PROBE_BUSY_MS);
      return false;
    } catch (err) {
      // Unreachable: this instance probes on its own.
      this.#onError(err);
      return true;
    }
  }

  async recovered(deployment: string): Promise<void> {
    this.#forget(deployment);
    await this.#run(
      this.#redis
        .multi()
        .del(this.#key("cooldown", deployment), this.#key("probe", deployment))
        .publish(this.#channel, this.#announcement(deployment, null))
        .exec(),
    );
  }

  async releaseProbe(deployment: string): Promise<void> {
    if (!this.#probes.delete(deployment)) return;
    await this.#run(this.#redis.del(this.#key("probe", deployment)));
  }

  async close(): Promise<void> {
    for (const connection of [this.#redis, this.#subscriber]) {
      connection.removeAllListeners("ready");
      await connection.quit().catch(() => connection.disconnect());
    }
  }

  #key(kind: "failures" | "cooldown" | "probe", deployment: string): string {
    return `${this.#prefix}${kind}:${deployment}`;
  }

  #announcement(deployment: string, cooldown: Cooldown | null): string {
    return JSON.stringify({ deployment, cooldown } satisfies Announcement);
  }

  #started(deployment: string, cooldown: Cooldown): void {
    this.#cooldowns.set(deployment, cooldown);
    this.#probes.delete(deployment);
    this.#busy.delete(deployment);
    this.#window.clear(deployment);
    this.#shared.delete(deployment);
    this.#onCoolDown(deployment, cooldown);
  }

  #forget(deployment: string): void {
    this.#cooldowns.delete(deployment);
    this.#probes.delete(deployment);
    this.#busy.delete(deployment);
  }

  /** Another instance (or this one, echoed) started or ended a cooldown. */
  #heard(message: string): void {
    let heard: Announcement;
    try {
      heard = JSON.parse(message) as Announcement;
    } catch {
      return;
    }
    if (heard.cooldown) {
      this.#cooldowns.set(heard.deployment, heard.cooldown);
      this.#busy.delete(heard.deployment);
      this.#window.clear(heard.deployment);
    } else this.#forget(heard.deployment);
  }

  async #load(): Promise<void> {
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, found] = await this.#redis.scan(
        cursor,
        "MATCH",
        `${this.#prefix}cooldown:*`,
        "COUNT",
        500,
      );
      cursor = next;
      keys.push(...found);
    } while (cursor !== "0");
    const values = keys.length ? await this.#redis.mget(...keys) : [];
    const start = `${this.#prefix}cooldown:`.length;
    const loaded = new Map<string, Cooldown>();
    keys.forEach((key, i) => {
      const value = values[i];
      if (value) loaded.set(key.slice(start), JSON.parse(value) as Cooldown);
    });
    for (const deployment of this.#cooldowns.keys()) if (!loaded.has(deployment)) this.#forget(deployment);
    for (const [deployment, cooldown] of loaded) this.#cooldowns.set(deployment, cooldown);
  }

  async #run(command: Promise<unknown>): Promise<void> {
    try {
      await command;
    } catch (err) {
      this.#onError(err);
    }
  }
}
