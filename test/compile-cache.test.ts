// What an idle instance's memory is spared (decision 0039). Node's compile cache as
// bin/chat-gateway.js turns it on: a start with a warm cache does not load Node's type stripper,
// whose WebAssembly stays in memory once loaded; `compile` fills a cache a read-only start then
// uses; the operator's NODE_COMPILE_CACHE and NODE_DISABLE_COMPILE_CACHE are Node's own and win.
// And a SQLite store loads neither PostgreSQL's nor Redis's client library.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createTestDatabase, needsPostgres } from "./support/postgres.ts";
import { START_ENTRY, START_FLAGS } from "./support/start-command.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "gw-compile-cache-"));
// prints, as the process exits, whether Node loaded its type stripper (swc's WebAssembly), and
// which store drivers it loaded (CommonJS packages: in require's cache)
const probe = join(dir, "probe.mjs");
writeFileSync(
  probe,
  `import { createRequire } from "node:module";
const loaded = createRequire(import.meta.url).cache;
process.on("exit", () => {
  process.stderr.write("stripper:" + process.moduleLoadList.some((m) => m.includes("amaro")) + "\\n");
  const drivers = ["pg", "ioredis"].filter((p) => Object.keys(loaded).some((f) => f.includes("/node_modules/" + p + "/")));
  process.stderr.write("drivers:" + drivers.join(",") + "\\n");
});
`,
);

/** `node <npm start's flags> bin/chat-gateway.js …args` with `env` over a clean environment. */
function run(args: string[], env: Record<string, string | undefined>, preload = false) {
  const environment: Record<string, string | undefined> = { ...process.env, ...env };
  for (const name of ["GATEWAY_CONFIG", "DATABASE_URL", "REDIS_URL"])
    if (!(name in env)) delete environment[name];
  environment.GATEWAY_DATA_DIR = join(dir, "data");
  const result = spawnSync(
    process.execPath,
    [...START_FLAGS, ...(preload ? ["--import", probe] : []), START_ENTRY, ...args],
    { cwd: ROOT, env: environment, encoding: "utf8" },
  );
  return {
    ...result,
    stripper: /stripper:(true|false)/.exec(result.stderr)?.[1],
    drivers: /drivers:(.*)/.exec(result.stderr)?.[1],
  };
}

describe("a store's drivers", () => {
  it("SQLite's store loads neither PostgreSQL's nor Redis's client", () => {
    const sqlite = run(["migrate"], {}, true);
    assert.equal(sqlite.status, 0, sqlite.stderr);
    assert.equal(sqlite.drivers, "");
  });
});

describe("a PostgreSQL store's driver", await needsPostgres(), () => {
  it("is loaded when the store is PostgreSQL", async () => {
    const database = await createTestDatabase();
    try {
      const postgres = run(["migrate"], { DATABASE_URL: database.url }, true);
      assert.equal(postgres.status, 0, postgres.stderr);
      assert.equal(postgres.drivers, "pg");
    } finally {
      await database.drop();
    }
  });
});

describe("the compile cache", () => {
  const cache = join(dir, "cache");
  after(() => {
    // made read-only by the first test
    chmodSync(cache, 0o700);
    for (const entry of readdirSync(cache)) chmodSync(join(cache, entry), 0o700);
    rmSync(dir, { recursive: true, force: true });
  });

  it("compile fills it with what serve loads; a start that finds it strips no types", () => {
    const cold = run(["--version"], { NODE_COMPILE_CACHE: cache }, true);
    assert.equal(cold.status, 0, cold.stderr);
    assert.equal(cold.stripper, "true", "an empty cache: the TypeScript is stripped");

    const compiled = run(["compile", "--json"], { NODE_COMPILE_CACHE: cache });
    assert.equal(compiled.status, 0, compiled.stderr);
    const folder = (JSON.parse(compiled.stdout) as { cache: string }).cache;
    assert.ok(folder.startsWith(cache), folder);
    // serve's modules are many more than the CLI's few
    assert.ok(readdirSync(folder).length > 500, `${readdirSync(folder).length} entries`);

    // read-only to the user that starts, as in the image
    for (const entry of readdirSync(cache)) chmodSync(join(cache, entry), 0o500);
    chmodSync(cache, 0o500);
    const warm = run(["config", "check"], { NODE_COMPILE_CACHE: cache }, true);
    assert.equal(warm.status, 0, warm.stderr);
    assert.equal(warm.stripper, "false", "every module came from the cache");
  });

  it("is beside the code when the environment names no folder", () => {
    const started = run(["--version"], {
      NODE_COMPILE_CACHE: undefined,
      NODE_DISABLE_COMPILE_CACHE: undefined,
    });
    assert.equal(started.status, 0, started.stderr);
    assert.ok(readdirSync(join(ROOT, "node_modules/.cache/chat-gateway")).length > 0);
  });

  it("NODE_DISABLE_COMPILE_CACHE turns it off, and compile says so", () => {
    const off = run(["compile"], { NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: "1" }, true);
    assert.equal(off.status, 1);
    assert.match(off.stderr, /compile cache is off/);
    assert.equal(off.stripper, "true");
  });
});
