import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { formatUsd, MAX_BUDGET_NANOS, parseUsd, UsdInputError, usd } from "./usd.ts";

describe("parseUsd", () => {
  test("dollars as typed, to nanodollars exactly", () => {
    const cases: [string, number][] = [
      ["25", 25_000_000_000],
      ["0.50", 500_000_000],
      ["$5", 5_000_000_000],
      [" 3.5 ", 3_500_000_000],
      [".25", 250_000_000],
      ["7.", 7_000_000_000],
      ["0", 0],
      ["0.000000001", 1],
      ["0.1", 100_000_000],
      ["1234567.123456789", 1_234_567_123_456_789],
      ["9000000", MAX_BUDGET_NANOS],
    ];
    for (const [text, nanos] of cases) assert.equal(parseUsd(text), nanos, text);
  });

  test("refusals say what is wrong", () => {
    const cases: [string, RegExp][] = [
      ["-5", /negative/],
      ["-$0.5", /negative/],
      ["0.0000000001", /more than 9 decimals/],
      ["9000000.000000001", /at most 9000000/],
      ["1e3", /amount of dollars/],
      ["2,50", /amount of dollars/],
      ["", /amount of dollars/],
      [".", /amount of dollars/],
      ["NaN", /amount of dollars/],
      ["Infinity", /amount of dollars/],
      ["five", /amount of dollars/],
    ];
    for (const [text, message] of cases)
      assert.throws(
        () => parseUsd(text),
        (err: unknown) => err instanceof UsdInputError && message.test(err.message),
        text,
      );
  });
});

describe("formatUsd and usd", () => {
  test("exact decimals, without trailing zeros", () => {
    assert.equal(formatUsd(0), "0");
    assert.equal(formatUsd(1), "0.000000001");
    assert.equal(formatUsd(150), "0.00000015");
    assert.equal(formatUsd(32_850_000), "0.03285");
    assert.equal(formatUsd(25_000_000_000), "25");
    assert.equal(formatUsd(MAX_BUDGET_NANOS), "9000000");
    assert.equal(formatUsd(-1_500_000_000), "-1.5");
  });

  test("a typed amount survives the round trip through nanodollars and dollars", () => {
    for (const text of ["0.000000001", "0.00000015", "12.345678901", "999999.999999999", "0.1"]) {
      assert.equal(formatUsd(parseUsd(text)), text);
      // the decimal number the CLI's JSON carries prints as the same decimal
      assert.equal(Number(text), usd(parseUsd(text)));
    }
  });
});
