import assert from "node:assert/strict";
import { test } from "node:test";
import { parseTime } from "./schemas.ts";

test("times: Unix milliseconds, an ISO date (its UTC midnight), a date-time with its zone", () => {
  assert.equal(parseTime("1796083200000"), 1_796_083_200_000);
  assert.equal(parseTime("2026-12-01"), Date.UTC(2026, 11, 1));
  assert.equal(parseTime("2026-12-01T13:00:00Z"), Date.UTC(2026, 11, 1, 13));
  assert.equal(parseTime("2026-12-01T13:00Z"), Date.UTC(2026, 11, 1, 13));
  assert.equal(parseTime("2026-12-01T14:00:00.250+01:00"), Date.UTC(2026, 11, 1, 13, 0, 0, 250));
});

test("refused: a day that does not exist, a date-time without a zone, other text", () => {
  for (const text of [
    "2026-02-30",
    "2026-13-01",
    "2026-12-01T13:00:00",
    "yesterday",
    "",
    "-5",
    "1.5",
    "2026-12-01 13:00Z",
  ])
    assert.equal(parseTime(text), undefined, text);
});
