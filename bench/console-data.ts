// The synthetic store of the console benchmark: accounts, keys and call records with the
// shape of a gateway that has served many customers for over a year. Pure generation from a
// seeded PRNG (the same --seed gives the same shape); bench/console-seed.ts writes it.
import { createHash } from "node:crypto";
import { newId } from "../src/accounts/key-format.ts";
import { DAY_MS, startOfUtcDay, utcDay } from "../src/records/days.ts";

/** mulberry32: small, fast and good enough to shape test data. */
export class Rng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** an integer from min to max, both included */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** a log-normal value: most near the median, a long tail above it */
  logNormal(median: number, sigma: number): number {
    const u = 1 - this.next();
    const normal = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
    return median * Math.exp(sigma * normal);
  }
}

/** Picks an index with probability proportional to its weight (binary search on the sums). */
export class Weighted {
  readonly #cumulative: Float64Array;

  constructor(weights: readonly number[]) {
    this.#cumulative = new Float64Array(weights.length);
    let sum = 0;
    weights.forEach((w, i) => {
      sum += w;
      this.#cumulative[i] = sum;
    });
  }

  pick(rng: Rng): number {
    const c = this.#cumulative;
    const target = rng.next() * c[c.length - 1]!;
    let lo = 0;
    let hi = c.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (c[mid]! > target) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}

// ---------------------------------------------------------------------------
// What the gateway offers: the config the benchmark's gateway runs with
// ---------------------------------------------------------------------------

export const MODELS = [
  { id: "gpt-4o-mini", provider: "openai", upstream: "gpt-4o-mini-2024-07-18" },
  { id: "gpt-4o", provider: "openai", upstream: "gpt-4o-2024-08-06" },
  { id: "llama-3.1-8b", provider: "vllm", upstream: "meta-llama/Llama-3.1-8B-Instruct" },
  { id: "llama-3.1-70b", provider: "vllm", upstream: "meta-llama/Llama-3.1-70B-Instruct" },
  { id: "qwen2.5-72b", provider: "vllm", upstream: "Qwen/Qwen2.5-72B-Instruct" },
  { id: "mistral-small", provider: "vllm", upstream: "mistralai/Mistral-Small-Instruct-2409" },
] as const;

export const PLANS = [
  { id: "starter", quota_tokens: 200_000_000, models: ["gpt-4o-mini", "llama-3.1-8b"] },
  {
    id: "pro",
    quota_tokens: 2_000_000_000,
    models: ["gpt-4o-mini", "gpt-4o", "llama-3.1-8b", "qwen2.5-72b"],
  },
  { id: "enterprise", quota_tokens: 50_000_000_000, models: MODELS.map((m) => m.id) },
] as const;

/**
 * The gateway's configuration for the seeded store (its providers answer offline). Its own
 * retention job is off: the benchmark measures the store as seeded, then runs retention once
 * itself, timed.
 */
export function gatewayConfig(store: { data_dir: string } | { database_url: string }, logLevel: string) {
  return {
    server: { host: "127.0.0.1", port: 0, shutdown_grace_ms: 2_000 },
    store,
    log_level: logLevel,
    default_plan: "starter",
    providers: [
      { id: "openai", type: "demo" },
      { id: "vllm", type: "demo" },
    ],
    models: MODELS.map((m) => ({ id: m.id, provider: m.provider, upstream_model: m.upstream })),
    plans: PLANS.map((p) => ({ id: p.id, quota_tokens: p.quota_tokens, models: [...p.models] })),
    retention: { enabled: false },
  };
}

// ---------------------------------------------------------------------------
// Accounts and keys
// ---------------------------------------------------------------------------

export interface SeedKey {
  id: string;
  account_id: string;
  name: string | null;
  prefix: string;
  secret_hash: string;
  limit_tokens: number | null;
  disabled: number;
  created_at: number;
  /** a deleted key has no records after this time */
  deleted_at: number | null;
  used_tokens: number;
}

export interface SeedAccount {
  id: string;
  name: string;
  plan_id: string;
  created_at: number;
  /** this account's share of all records, before normalisation */
  weight: number;
  keys: SeedKey[];
  keyPicker: Weighted;
  models: readonly string[];
  modelPicker: Weighted;
  /** content safety reviews this account's calls */
  safety: boolean;
  used_tokens: number;
  records: number;
}

const BASE62 = [..."0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"];

const KEY_NAMES = [
  "production",
  "staging",
  "ci",
  "batch-jobs",
  "notebook",
  "support-bot",
  "search",
  "mobile-app",
  "etl",
  "eval",
];

/**
 * 100 accounts by default, Zipf-weighted (s = 1): the biggest holds about a fifth of all
 * records, the smallest a few hundredths of a percent of them... of 1,000,000 records about
 * 190,000 and 1,900. Bigger accounts are on bigger plans and have more keys.
 */
export function makeAccounts(rng: Rng, count: number, now: number): SeedAccount[] {
  const accounts: SeedAccount[] = [];
  for (let i = 0; i < count; i++) {
    const plan = i < Math.ceil(count / 10) ? PLANS[2] : i < Math.ceil(count * 0.4) ? PLANS[1] : PLANS[0];
    const id = newId("acc");
    const created = now - 420 * DAY_MS - rng.int(0, 300) * DAY_MS;
    const keyCount = i < count / 10 ? rng.int(7, 10) : rng.int(3, 7);
    const keys: SeedKey[] = [];
    for (let k = 0; k < keyCount; k++) {
      const secret = `sk-bench-${i}-${k}-${rng.next()}`;
      let prefix = "sk-";
      for (let c = 0; c < 6; c++) prefix += rng.pick(BASE62);
      // Key 0 is never deleted, so every moment has a key left to carry the calls.
      const deleted = k > 0 && k === keyCount - 1 && rng.next() < 0.3;
      keys.push({
        id: newId("key"),
        account_id: id,
        name: rng.next() < 0.85 ? KEY_NAMES[k % KEY_NAMES.length]! : null,
        prefix,
        secret_hash: createHash("sha256").update(secret).digest("hex"),
        limit_tokens: rng.next() < 0.25 ? 1_000_000_000 : null,
        disabled: k > 0 && !deleted && rng.next() < 0.08 ? 1 : 0,
        created_at: created + k * rng.int(1, 9) * DAY_MS,
        deleted_at: deleted ? now - rng.int(30, 300) * DAY_MS : null,
        used_tokens: 0,
      });
    }
    const models = plan.models;
    accounts.push({
      id,
      name: `bench-account-${String(i + 1).padStart(3, "0")}`,
      plan_id: plan.id,
      created_at: created,
      weight: 1 / (i + 1),
      keys,
      // The first keys carry most of an account's traffic, as production keys do.
      keyPicker: new Weighted(keys.map((_, k) => 1 / (k + 1) ** 1.2)),
      models,
      // Each account leans on one or two models, mostly the cheap one.
      modelPicker: new Weighted(models.map((_, m) => (m === 0 ? 6 : 1 + rng.next() * 2))),
      safety: rng.next() < 0.15,
      used_tokens: 0,
      records: 0,
    });
  }
  return accounts;
}

// ---------------------------------------------------------------------------
// Call records
// ---------------------------------------------------------------------------

/** call_records columns, in the order of the rows below, with their PostgreSQL types. */
export const RECORD_COLUMNS = [
  ["request_id", "text"],
  ["created_at", "bigint"],
  ["account_id", "text"],
  ["key_id", "text"],
  ["public_model", "text"],
  ["upstream_model", "text"],
  ["provider", "text"],
  ["params", "text"],
  ["stream", "integer"],
  ["status", "text"],
  ["http_status", "integer"],
  ["error_code", "text"],
  ["prompt_tokens", "bigint"],
  ["completion_tokens", "bigint"],
  ["total_tokens", "bigint"],
  ["usage_source", "text"],
  ["latency_ms", "integer"],
  ["ttft_ms", "integer"],
  ["safety_mode", "text"],
  ["safety_verdict", "text"],
  ["safety_categories", "text"],
  ["safety_ms", "integer"],
] as const;

export type Row = unknown[];

/** One UTC day of aggregates: `${account}\0${key}\0${model}` -> [prompt, completion, total, calls]. */
export type DailyTotals = Map<string, [number, number, number, number]>;

export interface DayOfRecords {
  /** YYYY-MM-DD */
  day: string;
  rows: Row[];
  daily: DailyTotals;
}

export interface RecordShape {
  records: number;
  /** days covered, today included */
  days: number;
  /** share of all records made today, between the day's start and now */
  todayShare: number;
}

const PARAMS = [
  null,
  '{"temperature":0.7}',
  '{"temperature":0.2,"max_tokens":1024}',
  '{"temperature":1,"top_p":0.9}',
  '{"max_tokens":4096}',
  '{"temperature":0,"seed":42}',
  '{"temperature":0.8,"n":2,"max_tokens":512}',
];

/** ~8 % failed calls with no tokens; a few cut or filtered calls that still consumed some. */
const OUTCOMES = [
  { share: 0.022, status: "error", http: 400, code: "invalid_request" },
  { share: 0.008, status: "error", http: 404, code: "model_not_found" },
  { share: 0.014, status: "error", http: 429, code: "rate_limit_exceeded" },
  { share: 0.006, status: "error", http: 429, code: "key_limit_exceeded" },
  { share: 0.022, status: "upstream_error", http: 502, code: "upstream_error" },
  { share: 0.008, status: "upstream_error", http: 504, code: "upstream_timeout" },
  { share: 0.01, status: "client_disconnect", http: 499, code: null },
  { share: 0.01, status: "content_filter", http: 400, code: "content_filter" },
  { share: 0.9, status: "ok", http: 200, code: null },
] as const;
const OK = OUTCOMES[OUTCOMES.length - 1]!;
const outcomePicker = new Weighted(OUTCOMES.map((o) => o.share));

/** More calls in working hours (UTC), fewer at night. */
const hourPicker = new Weighted(
  Array.from({ length: 24 }, (_, h) => 0.35 + Math.sin((Math.PI * h) / 24) ** 2),
);

const modelInfo = new Map<string, (typeof MODELS)[number]>(MODELS.map((m) => [m.id, m]));

/**
 * Records day by day, oldest first (the order the gateway would have written them), each
 * day's rows sorted by time, with that day's daily_usage aggregates. Updates the accounts'
 * and keys' used_tokens and record counts as it goes.
 */
export function* generateRecords(
  rng: Rng,
  accounts: SeedAccount[],
  shape: RecordShape,
  now: number,
): Generator<DayOfRecords> {
  const todayStart = startOfUtcDay(now);
  const today = Math.round(shape.records * shape.todayShare);
  const past = shape.records - today;
  // Traffic grew over the year: the newest past day has three times the oldest one's weight,
  // weekends about 60 % of a weekday.
  const pastDays = shape.days - 1;
  const weights: number[] = [];
  for (let d = pastDays; d >= 1; d--) {
    const weekday = new Date(todayStart - d * DAY_MS).getUTCDay();
    weights.push((1 + (2 * (pastDays - d)) / pastDays) * (weekday === 0 || weekday === 6 ? 0.6 : 1));
  }
  const totalWeight = weights.reduce((a, b) => a + b, 0);
  const accountPicker = new Weighted(accounts.map((a) => a.weight));
  let cumulative = 0;
  let emitted = 0;
  for (let i = 0; i < pastDays; i++) {
    cumulative += weights[i]!;
    const upTo = Math.round((cumulative / totalWeight) * past);
    const start = todayStart - (pastDays - i) * DAY_MS;
    yield makeDay(rng, accounts, accountPicker, upTo - emitted, start, () => {
      return start + hourPicker.pick(rng) * 3_600_000 + Math.floor(rng.next() * 3_600_000);
    });
    emitted = upTo;
  }
  // Today: spread evenly over the hours so far.
  const soFar = Math.max(1, now - todayStart);
  yield makeDay(
    rng,
    accounts,
    accountPicker,
    today,
    todayStart,
    () => todayStart + Math.floor(rng.next() * soFar),
  );
}

function makeDay(
  rng: Rng,
  accounts: SeedAccount[],
  accountPicker: Weighted,
  count: number,
  dayStart: number,
  time: () => number,
): DayOfRecords {
  const times = new Float64Array(count);
  for (let i = 0; i < count; i++) times[i] = time();
  times.sort();
  const rows: Row[] = new Array(count);
  const daily: DailyTotals = new Map();
  for (let i = 0; i < count; i++) {
    const at = times[i]!;
    const account = accounts[accountPicker.pick(rng)]!;
    let key = account.keys[account.keyPicker.pick(rng)]!;
    if (key.deleted_at !== null && key.deleted_at <= at) key = account.keys[0]!;
    const model = modelInfo.get(account.models[account.modelPicker.pick(rng)]!)!;
    const row = makeRecord(rng, at, account, key, model);
    rows[i] = row;
    const total = row[14] as number;
    account.used_tokens += total;
    account.records++;
    key.used_tokens += total;
    const id = `${account.id}\0${key.id}\0${model.id}`;
    const sums = daily.get(id) ?? [0, 0, 0, 0];
    sums[0] += row[12] as number;
    sums[1] += row[13] as number;
    sums[2] += total;
    sums[3]++;
    daily.set(id, sums);
  }
  return { day: utcDay(dayStart), rows, daily };
}

function makeRecord(
  rng: Rng,
  at: number,
  account: SeedAccount,
  key: SeedKey,
  model: (typeof MODELS)[number],
): Row {
  const picked = OUTCOMES[outcomePicker.pick(rng)]!;
  // Only accounts under content safety have calls it filtered.
  const outcome = picked.status === "content_filter" && !account.safety ? OK : picked;
  const stream = rng.next() < 0.45 ? 1 : 0;
  let prompt = 0;
  let completion = 0;
  let usage = "none";
  let latency: number;
  let ttft: number | null = null;
  if (outcome.status === "error") {
    // Refused by the gateway before anything was sent upstream.
    latency = Math.round(rng.logNormal(2, 0.6));
  } else if (outcome.status === "upstream_error") {
    latency = outcome.http === 504 ? 60_000 + rng.int(0, 500) : Math.round(rng.logNormal(400, 1));
  } else {
    prompt = Math.min(120_000, Math.max(5, Math.round(rng.logNormal(350, 1.1))));
    completion = Math.min(8_000, Math.max(1, Math.round(rng.logNormal(180, 0.9))));
    usage = "upstream";
    if (outcome.status === "client_disconnect") {
      completion = Math.floor(completion * rng.next());
      usage = "estimated";
    }
    const first = Math.round(rng.logNormal(300, 0.5));
    ttft = stream ? first : null;
    latency = first + Math.round(completion * rng.logNormal(15, 0.4));
  }
  const filtered = outcome.status === "content_filter";
  return [
    newId("req"),
    at,
    account.id,
    key.id,
    model.id,
    outcome.status === "error" ? null : model.upstream,
    outcome.status === "error" ? null : model.provider,
    rng.pick(PARAMS),
    stream,
    outcome.status,
    outcome.http,
    outcome.code,
    prompt,
    completion,
    prompt + completion,
    usage,
    latency,
    ttft,
    account.safety ? "json" : null,
    account.safety ? (filtered ? "flagged" : "pass") : null,
    filtered ? '["violence"]' : null,
    account.safety ? Math.round(rng.logNormal(40, 0.5)) : null,
  ];
}
