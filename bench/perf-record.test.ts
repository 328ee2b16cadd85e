// --perf on a machine without perf: the bench stops before starting anything, saying what to install.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { checkPerf } from "./perf-record.ts";

test("without perf on the PATH, --perf is refused with what to install", () => {
  const empty = mkdtempSync(join(tmpdir(), "no-perf-"));
  const path = process.env.PATH;
  process.env.PATH = empty;
  try {
    assert.throws(checkPerf, /--perf needs Linux perf on the PATH \(Debian: apt-get install linux-perf\)/);
  } finally {
    process.env.PATH = path;
    rmSync(empty, { recursive: true, force: true });
  }
});
