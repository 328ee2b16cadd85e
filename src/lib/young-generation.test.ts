// The hold on the young generation's growth: V8 grows it when what it allocates survives, as
// start-up's modules do; held, it stays at its first size (with the module's flag taken out,
// the first test fails: it grew from 2 to 64 MB). An operator's own growth factor is left alone.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { getHeapSpaceStatistics } from "node:v8";
import { letYoungGenerationGrow } from "./young-generation.ts";

const youngMb = () =>
  getHeapSpaceStatistics().find((s) => s.space_name === "new_space")!.space_size / 2 ** 20;

/** Allocates about `mb` of small objects that all survive until it returns, as loading modules does. */
function keep(mb: number): number {
  const kept: unknown[] = [];
  for (let i = 0; i < mb * 2 ** 14; i++) kept.push({ i, s: `piece ${i}` });
  return kept.length;
}

test("held, the young generation does not grow while everything survives; let go, it does", () => {
  const before = youngMb();
  keep(64);
  const held = youngMb();
  assert.ok(held <= before, `grew from ${before} to ${held} MB while held`);
  letYoungGenerationGrow();
  keep(64);
  assert.ok(youngMb() > held, `stayed at ${held} MB once let go`);
});

test("a growth factor the operator gave Node is not held", () => {
  const script = `
    await import(${JSON.stringify(new URL("./young-generation.ts", import.meta.url).href)});
    const { getHeapSpaceStatistics } = await import("node:v8");
    const young = () => getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
    const before = young();
    const kept = [];
    for (let i = 0; i < 64 * 2 ** 14; i++) kept.push({ i, s: "piece " + i });
    console.log(JSON.stringify({ before, after: young(), kept: kept.length }));`;
  const run = (flags: string[]) =>
    JSON.parse(
      execFileSync(process.execPath, [...flags, "--input-type=module", "-e", script], { encoding: "utf8" }),
    ) as { before: number; after: number };
  // the same allocations: held, 1 -> 2 MB here; with the operator's factor, 1 -> 64 MB
  const operators = run(["--semi-space-growth-factor=2"]);
  const held = run([]);
  assert.ok(
    operators.after >= 8 * held.after,
    `with the operator's factor ${operators.after >> 20} MB, held ${held.after >> 20} MB`,
  );
});
