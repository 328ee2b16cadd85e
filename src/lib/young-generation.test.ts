// The hold on the young generation's growth, in this process: V8 grows it when what it
// allocates survives, as start-up's modules do; held, it stays at its first size (with the
// module's flag taken out, the first assertion fails: it grew from 2 to 64 MB).
import assert from "node:assert/strict";
import { test } from "node:test";
import { getHeapSpaceStatistics } from "node:v8";
import { letYoungGenerationGrow } from "./young-generation.ts";

const youngMb = () =>
  getHeapSpaceStatistics().find((s) => s.space_name === "new_space")!.space_size / 2 ** 20;

/** Allocates about `mb` of small objects that all survive, as loading modules does. */
function keep(mb: number): unknown[] {
  const kept: unknown[] = [];
  for (let i = 0; i < mb * 2 ** 14; i++) kept.push({ i, s: `piece ${i}` });
  return kept;
}

test("held, the young generation does not grow while everything survives; let go, it does", () => {
  const before = youngMb();
  const kept = [keep(64)];
  const held = youngMb();
  assert.ok(held <= before, `grew from ${before} to ${held} MB while held`);
  letYoungGenerationGrow();
  kept.push(keep(64));
  assert.ok(youngMb() > held, `stayed at ${held} MB once let go`);
  assert.ok(kept.length === 2);
});
