// Rate limits shared by every instance: the same token buckets as rate-limiter.ts, kept in
// Redis and taken by one Lua script, atomically across instances, on Redis's clock. A key
// limited to 6 requests a minute gets 6 answers in that minute, however many instances serve
// it. Buckets lost with Redis's state are rebuilt from the store: the calls recorded in the
// last minute and the holds of calls in flight are taken from a full bucket (no refill is
// credited, so a rebuilt bucket is never fuller than the lost one). While Redis is
// unreachable, calls are refused with 503.
import type { Kysely } from "kysely";
import { GatewayError } from "../errors/index.ts";
import { runScript } from "../store/redis-script.ts";
import { CHECK_EPOCH, RedisState } from "../store/redis-state.ts";
import type { Database } from "../store/schema.ts";
import type {
  Admission,
  RateLimits,
  RateState,
  RateSubject,
  RateTicket,
  RateWindow,
} from "./rate-limiter.ts";

const MINUTE = 60_000;

// KEYS[2..]: buckets; ARGV[2]: the epoch's start, ARGV[3]: take or peek, then per bucket its
// capacity and what it takes (-1: neither taken nor checked, only read). Answers ok and the levels, no (which bucket, wait ms, levels),
// or rebuild (which bucket): missing in an epoch younger than a minute, it may have been lost.
const ADMIT_LUA = `${CHECK_EPOCH}
local now = clock()
local fresh = now - tonumber(ARGV[2]) < 60000
local take = ARGV[3] == 'take'
local levels = {}
for j = 1, #KEYS - 1 do
  local cap = tonumber(ARGV[2 + 2 * j])
  local b = redis.call('HMGET', KEYS[j + 1], 'l', 't')
  if not b[1] then
    if fresh then return {'rebuild', j} end
    levels[j] = cap
  else
    levels[j] = math.min(cap, tonumber(b[1]) + (now - tonumber(b[2])) * cap / 60000)
  end
end
if take then
  for j = 1, #KEYS - 1 do
    local cap, need = tonumber(ARGV[2 + 2 * j]), tonumber(ARGV[3 + 2 * j])
    local want = math.min(need, cap)
    if need >= 0 and levels[j] < want then
      local out = {'no', j, math.ceil((want - levels[j]) * 60000 / cap)}
      for i = 1, #levels do out[#out + 1] = tostring(levels[i]) end
      return out
    end
  end
  for j = 1, #KEYS - 1 do
    local cap, need = tonumber(ARGV[2 + 2 * j]), tonumber(ARGV[3 + 2 * j])
    if need > 0 then
      levels[j] = levels[j] - need
      redis.call('HSET', KEYS[j + 1], 'l', tostring(levels[j]), 't', tostring(now))
      redis.call('PEXPIRE', KEYS[j + 1], math.ceil((cap - levels[j]) * 60000 / cap) + 1000)
    end
  end
end
local out = {'ok'}
for i = 1, #levels do out[#out + 1] = tostring(levels[i]) end
return out`;

// KEYS[2]: a bucket; ARGV[2]: its level rebuilt from the store. Kept if another instance was first.
const SEED_LUA = `${CHECK_EPOCH}
local now = clock()
if redis.call('EXISTS', KEYS[2]) == 1 then return {'exists'} end
redis.call('HSET', KEYS[2], 'l', ARGV[2], 't', tostring(now))
redis.call('PEXPIRE', KEYS[2], 61000)
return {'ok'}`;

// KEYS[2..]: token buckets; ARGV[2]: tokens to give back (negative: to take); then capacities.
// A ticket of a lost epoch gives nothing back: its bucket was rebuilt without it.
const SETTLE_LUA = `${CHECK_EPOCH}
local now = clock()
local back = tonumber(ARGV[2])
for j = 1, #KEYS - 1 do
  local cap = tonumber(ARGV[2 + j])
  local b = redis.call('HMGET', KEYS[j + 1], 'l', 't')
  if b[1] then
    local level = math.min(cap, math.min(cap, tonumber(b[1]) + (now - tonumber(b[2])) * cap / 60000) + back)
    redis.call('HSET', KEYS[j + 1], 'l', tostring(level), 't', tostring(now))
    redis.call('PEXPIRE', KEYS[j + 1], math.ceil((cap - level) * 60000 / cap) + 1000)
  end
end
return {'ok'}`;

interface Bucket {
  subject: RateSubject;
  kind: "requests" | "tokens";
  capacity: number;
}

function buckets(subjects: readonly RateSubject[], kinds: readonly ("requests" | "tokens")[]): Bucket[] {
  const out: Bucket[] = [];
  for (const subject of subjects)
    for (const kind of kinds) {
      const capacity = kind === "requests" ? subject.rpm : subject.tpm;
      if (capacity !== undefined) out.push({ subject, kind, capacity });
    }
  return out;
}

/** The tighter window of each kind, from the buckets' levels. */
function stateOf(list: readonly Bucket[], levels: readonly number[]): RateState {
  const state: RateState = {};
  list.forEach((b, i) => {
    const level = levels[i]!;
    const window: RateWindow = {
      limit: b.capacity,
      remaining: Math.max(0, Math.floor(level)),
      resetMs: Math.max(0, Math.ceil(((b.capacity - level) * MINUTE) / b.capacity)),
    };
    const current = state[b.kind];
    if (!current || window.remaining < current.remaining) state[b.kind] = window;
  });
  return state;
}

export class RedisRateLimiter implements RateLimits {
  readonly #redis: RedisState;
  readonly #db: Kysely<Database>;
  readonly #onError: (err: unknown) => void;
  #changed = new Map<string, RateSubject>();

  constructor(redis: RedisState, db: Kysely<Database>, onError: (err: unknown) => void) {
    this.#redis = redis;
    this.#db = db;
    this.#onError = onError;
  }

  #key(epoch: string, b: Bucket): string {
    return this.#redis.key(epoch, `rl:${b.subject.id}|${b.kind}`);
  }

  /** Takes (or only reads) the buckets; rebuilds any the store must restore first. */
  async #run(
    list: readonly Bucket[],
    mode: "take" | "peek",
    need: (b: Bucket) => number,
  ): Promise<{ epoch: string; refused?: { bucket: Bucket; retryAfterMs: number }; state: RateState }> {
    if (!list.length) return { epoch: "", state: {} };
    try {
      for (let rebuilt = 0; ; rebuilt++) {
        let used = "";
        const reply = await this.#redis.run(ADMIT_LUA, (epoch) => {
          used = epoch;
          return {
            keys: list.map((b) => this.#key(epoch, b)),
            args: [RedisState.started(epoch), mode, ...list.flatMap((b) => [b.capacity, need(b)])],
          };
        });
        if (reply[0] === "rebuild" && rebuilt < list.length) {
          await this.#rebuild(list[Number(reply[1]) - 1]!);
          continue;
        }
        if (reply[0] === "ok") return { epoch: used, state: stateOf(list, reply.slice(1).map(Number)) };
        if (reply[0] === "no")
          return {
            epoch: used,
            refused: { bucket: list[Number(reply[1]) - 1]!, retryAfterMs: Number(reply[2]) },
            state: stateOf(list, reply.slice(3).map(Number)),
          };
        throw new Error(`unexpected answer from the rate-limit script: ${String(reply[0])}`);
      }
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      throw new GatewayError("ledger_unavailable", { cause: err });
    }
  }

  /** A bucket the new epoch lacks: full, less what the store says the last minute took. */
  async #rebuild(b: Bucket): Promise<void> {
    const [kind, id] = b.subject.id.split(":") as ["key" | "account", string];
    const column = kind === "key" ? "key_id" : "account_id";
    const since = Date.now() - MINUTE;
    // Calls refused because the shared state was unreachable took nothing; any other may have.
    const recorded = await this.#db
      .selectFrom("call_records")
      .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.sum<number>("total_tokens").as("t")])
      .where(column, "=", id)
      .where("created_at", ">=", since)
      .where((eb) => eb.or([eb("error_code", "is", null), eb("error_code", "<>", "ledger_unavailable")]))
      .executeTakeFirstOrThrow();
    // a charged row's call is in its records already (charged in the same commit)
    const held = await this.#db
      .selectFrom("ledger_reservations")
      .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.sum<number>("tokens").as("t")])
      .where(column, "=", id)
      .where("charged_tokens", "is", null)
      .executeTakeFirstOrThrow();
    const taken =
      b.kind === "requests"
        ? Number(recorded.n) + Number(held.n)
        : Number(recorded.t ?? 0) + Number(held.t ?? 0);
    await this.#redis.run(SEED_LUA, (e) => ({
      keys: [this.#key(e, b)],
      args: [String(b.capacity - taken)],
    }));
  }

  async admit(subjects: readonly RateSubject[], tokens: number): Promise<Admission> {
    const list = buckets(subjects, ["requests", "tokens"]);
    const r = await this.#run(list, "take", (b) => (b.kind === "requests" ? 1 : tokens));
    if (r.refused)
      return { ok: false, kind: r.refused.bucket.kind, retryAfterMs: r.refused.retryAfterMs, state: r.state };
    for (const s of subjects) this.#changed.set(s.id, s);
    return { ok: true, ticket: { subjects, tokens, epoch: r.epoch }, state: r.state };
  }

  async admitTokens(ticket: RateTicket, tokens: number): Promise<Admission> {
    const list = buckets(ticket.subjects, ["requests", "tokens"]);
    const r = await this.#run(list, "take", (b) => (b.kind === "tokens" ? tokens : -1));
    if (r.refused) return { ok: false, kind: "tokens", retryAfterMs: r.refused.retryAfterMs, state: r.state };
    return {
      ok: true,
      ticket: { subjects: ticket.subjects, tokens: ticket.tokens + tokens, epoch: r.epoch },
      state: r.state,
    };
  }

  settle(ticket: RateTicket, actualTokens: number): void {
    for (const s of ticket.subjects) this.#changed.set(s.id, s);
    const list = buckets(ticket.subjects, ["tokens"]);
    if (!list.length || ticket.tokens === actualTokens || !ticket.epoch) return;
    const epoch = ticket.epoch;
    runScript(
      this.#redis.client,
      SETTLE_LUA,
      [this.#redis.epochKey, ...list.map((b) => this.#key(epoch, b))],
      [epoch, ticket.tokens - actualTokens, ...list.map((b) => b.capacity)],
    ).catch(this.#onError);
  }

  async peek(subjects: readonly RateSubject[]): Promise<RateState> {
    return (await this.#run(buckets(subjects, ["requests", "tokens"]), "peek", () => 0)).state;
  }

  windows(subject: RateSubject): Promise<RateState> {
    return this.peek([subject]);
  }

  drainChanged(): RateSubject[] {
    const changed = [...this.#changed.values()];
    this.#changed.clear();
    return changed;
  }
}
