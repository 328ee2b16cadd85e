// Suites needing PostgreSQL or Redis where neither answers: one line each says so and they do
// not run; under CI=true they fail instead. Checked by running real suites in a child
// `node --test` pointed at ports where nothing listens.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { runNode } from "./cli.ts";
import { suiteNeeding } from "./services.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const NOWHERE_PG = "postgres://postgres@127.0.0.1:1/postgres";
const NOWHERE_REDIS = "redis://127.0.0.1:1";

/** `node --test <file>` from the repository root with these variables; its exit code and output. */
async function runSuite(
  file: string,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
  // a child of the test runner would otherwise report to it instead of printing
  delete childEnv.NODE_TEST_CONTEXT;
  if (env.CI === undefined) delete childEnv.CI;
  const r = await runNode(["--test", "--test-reporter=spec", file], childEnv, { cwd: ROOT });
  return { code: r.code, output: r.stdout + r.stderr };
}

const lines = (output: string, pattern: RegExp) => output.split("\n").filter((l) => pattern.test(l));

describe("suites needing a service", () => {
  test("suiteNeeding: runs when reachable; skips with a reason when not; under CI=true runs (to fail)", () => {
    assert.deepEqual(suiteNeeding("PostgreSQL", "h:1", true, {}), {});
    const skipped = suiteNeeding("PostgreSQL", "h:1", false, {});
    assert.match(skipped.skip ?? "", /^PostgreSQL is not reachable at h:1/);
    assert.deepEqual(suiteNeeding("PostgreSQL", "h:1", false, { CI: "true" }), {});
  });

  test("PostgreSQL not reachable: the suite says so in one line and passes; with CI=true it fails", async () => {
    const local = await runSuite("src/store/db.test.ts", { TEST_PG_ADMIN_URL: NOWHERE_PG });
    assert.equal(local.code, 0, local.output);
    assert.equal(
      lines(local.output, /PostgreSQL is not reachable at 127\.0\.0\.1:1/).length,
      1,
      local.output,
    );
    const ci = await runSuite("src/store/db.test.ts", { TEST_PG_ADMIN_URL: NOWHERE_PG, CI: "true" });
    assert.notEqual(ci.code, 0, ci.output);
  });

  test("Redis not reachable: the same", async () => {
    const local = await runSuite("test/support/redis.test.ts", { TEST_REDIS_URL: NOWHERE_REDIS });
    assert.equal(local.code, 0, local.output);
    assert.equal(lines(local.output, /Redis is not reachable at 127\.0\.0\.1:1/).length, 1, local.output);
    const ci = await runSuite("test/support/redis.test.ts", { TEST_REDIS_URL: NOWHERE_REDIS, CI: "true" });
    assert.notEqual(ci.code, 0, ci.output);
  });
});
