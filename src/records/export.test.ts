import assert from "node:assert/strict";
import { test } from "node:test";
import { csvCell } from "./export.ts";

test("cells a spreadsheet would run as a formula get a leading quote", () => {
  for (const text of ["=1+2", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"])
    assert.equal(csvCell(text).replace(/^"/, "").slice(0, 1), "'", JSON.stringify(text));
});

test("also behind whitespace, a NUL, or in full-width form", () => {
  for (const text of [" =1+2", "\u00a0=1", "\u3000=1", "\u0000=1", "＝1+2", "＋1", "－1", "＠SUM(A1)"]) {
    const cell = csvCell(text);
    assert.ok(
      cell.startsWith("'") || cell.startsWith(`"'`),
      `${JSON.stringify(text)} -> ${JSON.stringify(cell)}`,
    );
  }
});

test("other text is left as it is, quoted where RFC 4180 asks", () => {
  assert.equal(csvCell("gpt-4o"), "gpt-4o");
  assert.equal(csvCell("a,b"), '"a,b"');
  assert.equal(csvCell('say "hi"'), '"say ""hi"""');
  assert.equal(csvCell(null), "");
  assert.equal(csvCell(42), "42");
});

test("numbers are written in plain decimal notation, never with an exponent", () => {
  assert.equal(csvCell(1.5e-7), "0.00000015");
  assert.equal(csvCell(1e-9), "0.000000001");
  assert.equal(csvCell(0.000123456789), "0.000123456789");
  assert.equal(csvCell(0.03285), "0.03285");
  assert.equal(csvCell(25), "25");
  assert.equal(csvCell(1e21), "1000000000000000000000");
  assert.equal(csvCell(1.25e22), "12500000000000000000000");
});
