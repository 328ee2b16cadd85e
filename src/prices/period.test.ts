import assert from "node:assert/strict";
import { test } from "node:test";
import { monthOf } from "./period.ts";

test("monthOf: the UTC month, at its edges, in any order of asking", () => {
  const dec = Date.UTC(2026, 11, 1);
  const cases: [number, string][] = [
    [dec - 1, "2026-11"],
    [dec, "2026-12"],
    [dec - 1, "2026-11"], // back again: the remembered month must not answer for another
    [Date.UTC(2026, 11, 31, 23, 59, 59, 999), "2026-12"],
    [Date.UTC(2027, 0, 1), "2027-01"],
    [Date.UTC(2024, 1, 29, 12), "2024-02"],
    [0, "1970-01"],
  ];
  for (const [ms, month] of cases) assert.equal(monthOf(ms), month, new Date(ms).toISOString());
});
