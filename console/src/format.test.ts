import assert from "node:assert/strict";
import { test } from "node:test";
import { parseTokenCount } from "./format.ts";

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
