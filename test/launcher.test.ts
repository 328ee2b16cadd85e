// What an idle instance's memory is spared by how it is started. bin/chat-gateway.js runs the
// compiled build (dist/) when it is a build of the source beside it, without Node's compile
// cache, and the TypeScript otherwise (decision 0042); for the TypeScript it turns the compile
// cache on, so that a start with a warm cache does not load Node's type stripper, whose
// WebAssembly stays in memory once loaded; `compile` fills a cache a read-only start then uses;
// the operator's NODE_COMPILE_CACHE and NODE_DISABLE_COMPILE_CACHE are Node's own and win
// (decision 0039). And serve loads neither PostgreSQL's nor Redis's client on SQLite, nor
// Fastify's schema compilers or undici's entry anywhere.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { DIGEST_FILE, sourceDigest } from "../bin/source-digest.js";
import { createTestDatabase, needsPostgres } from "./support/postgres.ts";
import { START_ENTRY, START_FLAGS } from "./support/start-command.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "gw-launcher-"));
// prints, as the process exits, whether Node loaded its type stripper (swc's WebAssembly), and
// which store drivers and other packages it loaded (CommonJS packages: in require's cache)
const probe = join(dir, "probe.mjs");
writeFileSync(
  probe,
  `import { createRequire } from "node:module";
const loaded = createRequire(import.meta.url).cache;
process.on("exit", () => {
  const files = Object.keys(loaded);
  process.stderr.write("stripper:" + process.moduleLoadList.some((m) => m.includes("amaro")) + "\\n");
  const drivers = ["pg", "ioredis"].filter((p) => files.some((f) => f.includes("/node_modules/" + p + "/")));
  process.stderr.write("drivers:" + drivers.join(",") + "\\n");
  const unwanted = ["ajv/", "@fastify/ajv-compiler/", "fast-json-stringify/index.js", "undici/index.js"];
  process.stderr.write("unwanted:" + unwanted.filter((p) => files.some((f) => f.includes("/node_modules/" + p))).join(",") + "\\n");
});
`,
);

/**
 * A clone that runs its TypeScript: the launcher, the real src/ and a node_modules of its own
 * for the compile cache (the modules resolve their packages from where src/ really is), and no
 * dist/.
 */
const clone = join(dir, "clone");
mkdirSync(join(clone, "node_modules"), { recursive: true });
cpSync(join(ROOT, "bin"), join(clone, "bin"), { recursive: true });
symlinkSync(join(ROOT, "src"), join(clone, "src"), "dir");

/** `node <npm start's flags> bin/chat-gateway.js …args` in `root`, with `env` over a clean environment. */
function run(args: string[], env: Record<string, string | undefined>, preload = false, root = ROOT) {
  const environment: Record<string, string | undefined> = { ...process.env, ...env };
  for (const name of ["GATEWAY_CONFIG", "DATABASE_URL", "REDIS_URL", "NODE_COMPILE_CACHE"])
    if (!(name in env)) delete environment[name];
  environment.GATEWAY_DATA_DIR = join(dir, "data");
  const result = spawnSync(
    process.execPath,
    [...START_FLAGS, ...(preload ? ["--import", probe] : []), join(root, START_ENTRY), ...args],
    { cwd: root, env: environment, encoding: "utf8" },
  );
  return {
    ...result,
    stripper: /stripper:(true|false)/.exec(result.stderr)?.[1],
    drivers: /drivers:(.*)/.exec(result.stderr)?.[1],
    unwanted: /unwanted:(.*)/.exec(result.stderr)?.[1],
  };
}

describe("which code runs", () => {
  // a tree whose two entries say which of them ran, and whether the compile cache is on
  const tree = join(dir, "tree");
  const entry = (ran: string) => `import { getCompileCacheDir } from "node:module";
export async function main() {
  console.log(JSON.stringify({ ran: "${ran}", cache: getCompileCacheDir() ?? null }));
}
`;
  mkdirSync(join(tree, "src", "lib"), { recursive: true });
  mkdirSync(join(tree, "dist"));
  cpSync(join(ROOT, "bin"), join(tree, "bin"), { recursive: true });
  writeFileSync(join(tree, "src", "main.ts"), entry("src"));
  writeFileSync(join(tree, "src", "lib", "part.ts"), "export const part: number = 1;\n");
  writeFileSync(join(tree, "dist", "main.js"), entry("dist"));
  const start = (env: Record<string, string | undefined> = {}) => {
    const r = run([], { NODE_DISABLE_COMPILE_CACHE: undefined, ...env }, false, tree);
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { ran: string; cache: string | null };
  };
  const built = () => writeFileSync(join(tree, "dist", DIGEST_FILE), `${sourceDigest(join(tree, "src"))}\n`);

  it("the TypeScript, with the compile cache beside it, while dist/ names no source", () => {
    const started = start();
    assert.equal(started.ran, "src");
    assert.ok(
      started.cache?.startsWith(join(tree, "node_modules", ".cache", "chat-gateway")),
      started.cache ?? "off",
    );
  });

  it("the build, without the cache, when it is a build of this source", () => {
    built();
    assert.deepEqual(start(), { ran: "dist", cache: null });
    // a test is not compiled: adding one changes nothing
    writeFileSync(join(tree, "src", "lib", "part.test.ts"), "export {};\n");
    assert.deepEqual(start(), { ran: "dist", cache: null });
  });

  it("the operator's NODE_COMPILE_CACHE is Node's own and applies to the build too", () => {
    built();
    const theirs = join(dir, "theirs");
    const started = start({ NODE_COMPILE_CACHE: theirs });
    assert.equal(started.ran, "dist");
    assert.ok(started.cache?.startsWith(theirs), started.cache ?? "off");
  });

  it("the TypeScript again once a source file changed, was added or was removed after the build", () => {
    built();
    appendFileSync(join(tree, "src", "lib", "part.ts"), "// edited\n");
    assert.equal(start().ran, "src");
    built();
    writeFileSync(join(tree, "src", "lib", "more.ts"), "export {};\n");
    assert.equal(start().ran, "src");
    built();
    rmSync(join(tree, "src", "lib", "more.ts"));
    assert.equal(start().ran, "src");
  });

  it("the build when there is no source (the packed package)", () => {
    rmSync(join(tree, "dist", DIGEST_FILE), { force: true });
    rmSync(join(tree, "src"), { recursive: true });
    assert.deepEqual(start(), { ran: "dist", cache: null });
  });
});

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

describe("the compile cache, in a clone that runs its TypeScript", () => {
  const cache = join(dir, "cache");
  after(() => {
    // made read-only by the first test
    chmodSync(cache, 0o700);
    for (const entry of readdirSync(cache)) chmodSync(join(cache, entry), 0o700);
    // the last suite: the folder of them all
    rmSync(dir, { recursive: true, force: true });
  });

  it("compile fills it with what serve loads; a start that finds it strips no types", () => {
    const cold = run(["--version"], { NODE_COMPILE_CACHE: cache }, true, clone);
    assert.equal(cold.status, 0, cold.stderr);
    assert.equal(cold.stripper, "true", "an empty cache: the TypeScript is stripped");

    const compiled = run(["compile", "--json"], { NODE_COMPILE_CACHE: cache }, true, clone);
    assert.equal(compiled.status, 0, compiled.stderr);
    // what serve loads: neither Fastify's schema compilers (no route has a schema) nor undici's
    // entry (the pool only: src/providers/undici-pool.ts)
    assert.equal(compiled.unwanted, "");
    const folder = (JSON.parse(compiled.stdout) as { cache: string }).cache;
    assert.ok(folder.startsWith(cache), folder);
    // serve's modules are many more than the CLI's few
    assert.ok(readdirSync(folder).length > 500, `${readdirSync(folder).length} entries`);

    // read-only to the user that starts, as in the image
    for (const entry of readdirSync(cache)) chmodSync(join(cache, entry), 0o500);
    chmodSync(cache, 0o500);
    const warm = run(["config", "check"], { NODE_COMPILE_CACHE: cache }, true, clone);
    assert.equal(warm.status, 0, warm.stderr);
    assert.equal(warm.stripper, "false", "every module came from the cache");
  });

  it("is beside the code when the environment names no folder", () => {
    const beside = join(clone, "node_modules/.cache/chat-gateway");
    assert.equal(existsSync(beside), false);
    const started = run(["--version"], { NODE_DISABLE_COMPILE_CACHE: undefined }, false, clone);
    assert.equal(started.status, 0, started.stderr);
    assert.ok(readdirSync(beside).length > 0);
  });

  it("NODE_DISABLE_COMPILE_CACHE turns it off, and compile says so", () => {
    const off = run(["compile"], { NODE_DISABLE_COMPILE_CACHE: "1" }, true, clone);
    assert.equal(off.status, 1);
    assert.match(off.stderr, /compile cache is off/);
    assert.equal(off.stripper, "true");
  });
});
