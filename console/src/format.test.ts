import assert from "node:assert/strict";
import { test } from "node:test";
import { fmtUsd, parseTokenCount, parseUsdAmount } from "./format.ts";

test("a token count reads with or without separators", () => {
  assert.equal(parseTokenCount("1000000"), 1_000_000);
  assert.equal(parseTokenCount("1,000,000"), 1_000_000);
  assert.equal(parseTokenCount(" 1 000 000 "), 1_000_000);
  assert.equal(parseTokenCount("1_000"), 1000);
  assert.equal(parseTokenCount("0"), 0);
});

test("an empty token count is none", () => {
  assert.equal(parseTokenCount(""), null);
  assert.equal(parseTokenCount("  "), null);
});

test("anything but a whole number of tokens is invalid", () => {
  for (const text of ["1.5", "1.5M", "-5", "1e6", "ten", "12k"])
    assert.equal(parseTokenCount(text), "invalid", text);
});

test("dollars from nanodollars: exact, with at least cents and thousands separators", () => {
  assert.equal(fmtUsd(70_000), "$0.00007");
  assert.equal(fmtUsd(1), "$0.000000001");
  assert.equal(fmtUsd(0), "$0.00");
  assert.equal(fmtUsd(5_000_000_000), "$5.00");
  assert.equal(fmtUsd(1_234_500_000_000), "$1,234.50");
  assert.equal(fmtUsd(null), "–");
});

test("a typed dollar amount: nanodollars, empty is none, the reason otherwise", () => {
  assert.equal(parseUsdAmount("5", "The budget"), 5_000_000_000);
  assert.equal(parseUsdAmount("$0.000001", "The budget"), 1_000);
  assert.equal(parseUsdAmount("  ", "The budget"), null);
  assert.throws(() => parseUsdAmount("-1", "The budget"), /The budget must not be negative; leave it empty/);
  assert.throws(() => parseUsdAmount("2,50", "The budget"), /amount of dollars/);
  assert.throws(() => parseUsdAmount("0.0000000001", "The budget"), /more than 9 decimals/);
});
