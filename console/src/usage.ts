// The operators' dashboard's arithmetic: the time range asked for (UTC days, as everywhere in
// the console; hours for a short range), the buckets its charts draw, the admin API's groups
// read as those buckets, and totals over groups.
import type { UsageRow } from "./admin-types.ts";

const HOUR = 3_600_000;
const DAY = 86_400_000;

export type Unit = "hour" | "day";

export const PRESETS = {
  "24h": "Last 24 hours",
  "7d": "7 days",
  "30d": "30 days",
  "90d": "90 days",
} as const;
export type Preset = keyof typeof PRESETS;

export interface Range {
  /** Unix ms, inclusive */
  from: number;
  /** Unix ms, exclusive */
  to: number;
  unit: Unit;
  /** the charts' x axis, oldest first: "YYYY-MM-DD", or "YYYY-MM-DDTHH" for hours (UTC) */
  buckets: string[];
}

/** A range at most this long is drawn in hours. */
const HOURLY_UP_TO = 2 * DAY;
/** The longest custom range: a year and a day. */
const LONGEST = 366 * DAY;

const dayStart = (ms: number) => Math.floor(ms / DAY) * DAY;
const hourStart = (ms: number) => Math.floor(ms / HOUR) * HOUR;

export function bucketOfMs(ms: number, unit: Unit): string {
  const iso = new Date(ms).toISOString();
  return unit === "day" ? iso.slice(0, 10) : iso.slice(0, 13);
}

function bucketsOf(from: number, to: number, unit: Unit): string[] {
  const step = unit === "day" ? DAY : HOUR;
  const out: string[] = [];
  for (let t = unit === "day" ? dayStart(from) : hourStart(from); t < to; t += step)
    out.push(bucketOfMs(t, unit));
  return out;
}

/**
 * A preset up to now: the last 24 hours (24 hourly bars, this hour's included), or the last N
 * UTC days, today included.
 */
export function presetRange(preset: Preset, now = Date.now()): Range {
  if (preset === "24h") {
    const to = hourStart(now) + HOUR;
    const from = to - 24 * HOUR;
    return { from, to, unit: "hour", buckets: bucketsOf(from, to, "hour") };
  }
  const days = { "7d": 7, "30d": 30, "90d": 90 }[preset];
  const to = dayStart(now) + DAY;
  const from = to - days * DAY;
  return { from, to, unit: "day", buckets: bucketsOf(from, to, "day") };
}

const DAY_TEXT = /^\d{4}-\d{2}-\d{2}$/;

/**
 * UTC days from the first to the last, both included; hourly when two days or less. Throws
 * the reason when they are not days, the wrong way round, or more than a year apart.
 */
export function daysRange(firstDay: string, lastDay: string): Range {
  if (!DAY_TEXT.test(firstDay) || !DAY_TEXT.test(lastDay)) throw new Error("Choose a first and a last day.");
  const from = Date.parse(`${firstDay}T00:00:00Z`);
  const to = Date.parse(`${lastDay}T00:00:00Z`) + DAY;
  if (Number.isNaN(from) || Number.isNaN(to)) throw new Error("Choose a first and a last day.");
  if (to <= from) throw new Error("The first day must not be after the last.");
  if (to - from > LONGEST) throw new Error("Choose at most a year.");
  const unit: Unit = to - from <= HOURLY_UP_TO ? "hour" : "day";
  return { from, to, unit, buckets: bucketsOf(from, to, unit) };
}

/**
 * A day or hour group of the usage API as a bucket of the charts. The API's groups are UTC
 * days "YYYY-MM-DD" and hours, which are read in any ISO form ("2026-11-20T13",
 * "2026-11-20T13:00:00Z", "2026-11-20 13:00") or as Unix ms; null for what is none of these.
 */
export function bucketOf(group: string, unit: Unit): string | null {
  let ms: number;
  if (/^\d+$/.test(group)) ms = Number(group);
  else if (DAY_TEXT.test(group)) ms = Date.parse(`${group}T00:00:00Z`);
  else {
    const m =
      /^(\d{4}-\d{2}-\d{2})[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/.exec(group);
    if (!m) return null;
    const zone = m[5] ? m[5].replace(/^([+-]\d{2})(\d{2})$/, "$1:$2") : "Z";
    ms = Date.parse(`${m[1]}T${m[2]}:${m[3] ?? "00"}:${m[4] ?? "00"}${zone}`);
  }
  return Number.isNaN(ms) ? null : bucketOfMs(ms, unit);
}

/** A bucket under its bar: "Nov 20" for a day, "13:00" for an hour (UTC). */
export function bucketShort(bucket: string): string {
  if (bucket.length === 10)
    return new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" }).format(
      new Date(`${bucket}T00:00:00Z`),
    );
  return `${bucket.slice(11, 13)}:00`;
}

/** A bucket in full: "Nov 20, 2026 (UTC)", "Nov 20, 13:00–14:00 UTC". */
export function bucketLong(bucket: string): string {
  const day = bucket.slice(0, 10);
  const date = new Intl.DateTimeFormat(undefined, {
    month: "short",
    day: "numeric",
    ...(bucket.length === 10 ? { year: "numeric" } : {}),
    timeZone: "UTC",
  }).format(new Date(`${day}T00:00:00Z`));
  if (bucket.length === 10) return `${date} (UTC)`;
  const hour = Number(bucket.slice(11, 13));
  return `${date}, ${String(hour).padStart(2, "0")}:00–${String((hour + 1) % 24).padStart(2, "0")}:00 UTC`;
}

export interface UsageTotals {
  calls: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_nanos: number;
  /** over every call of the groups (each group's average weighted by its calls); null without calls */
  avg_latency_ms: number | null;
}

/** The groups added up: the range's figures from its days, or a total from its models. */
export function totalsOf(rows: readonly UsageRow[]): UsageTotals {
  const t: UsageTotals = {
    calls: 0,
    errors: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    cost_nanos: 0,
    avg_latency_ms: null,
  };
  let latencyWeight = 0;
  let latencySum = 0;
  for (const r of rows) {
    t.calls += Number(r.calls);
    t.errors += Number(r.errors);
    t.prompt_tokens += Number(r.prompt_tokens);
    t.completion_tokens += Number(r.completion_tokens);
    t.total_tokens += Number(r.total_tokens);
    t.cost_nanos += Number(r.cost_nanos);
    if (r.avg_latency_ms !== null && r.avg_latency_ms !== undefined && Number(r.calls) > 0) {
      latencySum += Number(r.avg_latency_ms) * Number(r.calls);
      latencyWeight += Number(r.calls);
    }
  }
  if (latencyWeight > 0) t.avg_latency_ms = latencySum / latencyWeight;
  return t;
}

/** A share as a percentage with one decimal: "2.5%"; "–" of nothing. */
export function percent(part: number, whole: number): string {
  if (!whole) return "–";
  return `${((part / whole) * 100).toFixed(1).replace(/\.0$/, "")}%`;
}

/** The `n` groups largest by `measure`, largest first. */
export function topRows(rows: readonly UsageRow[], n: number, measure: (r: UsageRow) => number): UsageRow[] {
  return [...rows].sort((a, b) => measure(b) - measure(a) || (a.group < b.group ? -1 : 1)).slice(0, n);
}

/** One group's amounts by bucket (rows of group_by=day or hour). */
export function byBucket(rows: readonly UsageRow[], unit: Unit, measure: (r: UsageRow) => number) {
  const map = new Map<string, number>();
  for (const r of rows) {
    const bucket = bucketOf(r.group, unit);
    if (bucket !== null) map.set(bucket, (map.get(bucket) ?? 0) + measure(r));
  }
  return map;
}

/** What the parts leave of the whole, bucket by bucket (never below 0): the "others" of a split. */
export function remainder(
  whole: Map<string, number>,
  parts: readonly Map<string, number>[],
): Map<string, number> {
  const rest = new Map<string, number>();
  for (const [bucket, value] of whole) {
    const left = value - parts.reduce((sum, p) => sum + (p.get(bucket) ?? 0), 0);
    if (left > 0) rest.set(bucket, left);
  }
  return rest;
}
