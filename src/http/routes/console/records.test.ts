import assert from "node:assert/strict";
import { test } from "node:test";
import { csvCell } from "./records.ts";

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
