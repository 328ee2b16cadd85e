import assert from "node:assert/strict";
import { test } from "node:test";
import type { UsageRow } from "./admin-types.ts";
import {
  bucketLong,
  bucketOf,
  byBucket,
  daysRange,
  percent,
  presetRange,
  remainder,
  topRows,
  totalsOf,
} from "./usage.ts";

const NOW = Date.parse("2026-11-20T13:45:10Z");

const row = (group: string, calls: number, extra: Partial<UsageRow> = {}): UsageRow => ({
  group,
  calls,
  errors: 0,
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: calls * 10,
  cost_nanos: calls * 1000,
  avg_latency_ms: null,
  ...extra,
});

test("the last 24 hours: 24 hourly buckets, this hour's the last", () => {
  const r = presetRange("24h", NOW);
  assert.equal(r.unit, "hour");
  assert.equal(r.buckets.length, 24);
  assert.equal(r.buckets.at(-1), "2026-11-20T13");
  assert.equal(r.buckets[0], "2026-11-19T14");
  assert.equal(r.from, Date.parse("2026-11-19T14:00:00Z"));
  assert.equal(r.to, Date.parse("2026-11-20T14:00:00Z"));
});

test("the last N days are UTC days, today included", () => {
  const r = presetRange("7d", NOW);
  assert.equal(r.unit, "day");
  assert.deepEqual(r.buckets, [
    "2026-11-14",
    "2026-11-15",
    "2026-11-16",
    "2026-11-17",
    "2026-11-18",
    "2026-11-19",
    "2026-11-20",
  ]);
  assert.equal(r.from, Date.parse("2026-11-14T00:00:00Z"));
  assert.equal(r.to, Date.parse("2026-11-21T00:00:00Z"));
  assert.equal(presetRange("90d", NOW).buckets.length, 90);
});

test("chosen days include both ends; two days or less are drawn in hours", () => {
  const one = daysRange("2026-11-20", "2026-11-20");
  assert.equal(one.unit, "hour");
  assert.equal(one.buckets.length, 24);
  assert.equal(daysRange("2026-11-19", "2026-11-20").buckets.length, 48);
  const week = daysRange("2026-11-01", "2026-11-07");
  assert.equal(week.unit, "day");
  assert.equal(week.buckets.length, 7);
  assert.equal(week.to, Date.parse("2026-11-08T00:00:00Z"));
});

test("chosen days that make no range say why", () => {
  assert.throws(() => daysRange("", "2026-11-20"), /first and a last day/);
  assert.throws(() => daysRange("2026-11-21", "2026-11-20"), /must not be after/);
  assert.throws(() => daysRange("2024-01-01", "2026-01-01"), /at most a year/);
});

test("the API's day and hour groups, in any ISO form or Unix ms, are the charts' buckets", () => {
  assert.equal(bucketOf("2026-11-20", "day"), "2026-11-20");
  assert.equal(bucketOf("2026-11-20T13", "hour"), "2026-11-20T13");
  assert.equal(bucketOf("2026-11-20T13:00:00Z", "hour"), "2026-11-20T13");
  assert.equal(bucketOf("2026-11-20T13:00:00.000Z", "hour"), "2026-11-20T13");
  assert.equal(bucketOf("2026-11-20 13:00", "hour"), "2026-11-20T13");
  assert.equal(bucketOf("2026-11-20T15:00:00+02:00", "hour"), "2026-11-20T13");
  assert.equal(bucketOf(String(Date.parse("2026-11-20T13:30:00Z")), "hour"), "2026-11-20T13");
  assert.equal(bucketOf("gpt-4o", "day"), null);
});

test("a bucket in full says its hour and that it is UTC", () => {
  assert.match(bucketLong("2026-11-20T23"), /23:00–00:00 UTC$/);
  assert.match(bucketLong("2026-11-20"), /2026 \(UTC\)$/);
});

test("totals add the groups; latency is weighted by calls", () => {
  const t = totalsOf([
    row("a", 1, { avg_latency_ms: 100, errors: 1 }),
    row("b", 3, { avg_latency_ms: 200 }),
    row("c", 0, { avg_latency_ms: null }),
  ]);
  assert.equal(t.calls, 4);
  assert.equal(t.errors, 1);
  assert.equal(t.total_tokens, 40);
  assert.equal(t.cost_nanos, 4000);
  assert.equal(t.avg_latency_ms, 175);
  assert.equal(totalsOf([]).avg_latency_ms, null);
});

test("the largest groups first", () => {
  const rows = [row("a", 1), row("b", 5), row("c", 3)];
  assert.deepEqual(
    topRows(rows, 2, (r) => r.calls).map((r) => r.group),
    ["b", "c"],
  );
});

test("a split's others are what its parts leave of the whole", () => {
  const whole = byBucket([row("2026-11-19", 5), row("2026-11-20", 2)], "day", (r) => r.calls);
  const part = byBucket([row("2026-11-19", 3), row("2026-11-20", 2)], "day", (r) => r.calls);
  assert.deepEqual([...remainder(whole, [part])], [["2026-11-19", 2]]);
});

test("shares as percentages", () => {
  assert.equal(percent(1, 4), "25%");
  assert.equal(percent(1, 3), "33.3%");
  assert.equal(percent(0, 0), "–");
});
