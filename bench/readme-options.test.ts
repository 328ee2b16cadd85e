// The bench README's option tables list what the bench takes: every flag (and BENCH_ variable)
// of each usage text has its row, and no row names a flag the bench does not take.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { USAGE as CONSOLE_USAGE } from "./console-options.ts";
import { USAGE } from "./options.ts";

const README = readFileSync(new URL("./README.md", import.meta.url), "utf8");

/** The README's tables whose first column is "flag", each as its rows' cells. */
function flagTables(): string[][][] {
  const tables: string[][][] = [];
  let rows: string[][] = [];
  for (const line of [...README.split("\n"), ""]) {
    if (line.startsWith("|")) {
      rows.push(
        line
          .split("|")
          .slice(1, -1)
          .map((c) => c.trim()),
      );
      continue;
    }
    if (rows[0]?.[0] === "flag") tables.push(rows.slice(2));
    rows = [];
  }
  return tables;
}

const names = (text: string, pattern: RegExp) => [...text.matchAll(pattern)].map((m) => m[1]!).sort();
const FLAG = /^\s+(--[a-z-]+)/gm;

test("the README's options tables name every flag and variable of the bench's usage, and no other", () => {
  const tables = flagTables();
  assert.equal(tables.length, 2, "the bench's table and the console bench's");
  const [bench, consoleBench] = tables as [string[][], string[][]];
  const flagsOf = (rows: string[][]) => rows.map((r) => /`(--[a-z-]+)/.exec(r[0]!)?.[1] ?? r[0]!).sort();
  assert.deepEqual(flagsOf(bench), names(USAGE, FLAG));
  assert.deepEqual(
    bench.flatMap((r) => /BENCH_[A-Z_]+/.exec(r[1]!)?.[0] ?? []).sort(),
    names(USAGE, /\((BENCH_[A-Z_]+)/g),
  );
  assert.deepEqual(flagsOf(consoleBench), names(CONSOLE_USAGE, FLAG));
});
