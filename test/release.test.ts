// The release as an operator gets it: the licence files, the version and its changelog entry,
// the `chat-gateway` command (--version, --json output that parses), the build step npm runs,
// and the package itself: packed with `npm pack` from a copy of the repository, its file list
// checked, then run from its files with the production dependencies alone (the API through
// the official `openai` SDK, the built console, the counting worker, a start without console).
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative, sep } from "node:path";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { DIGEST_FILE, sourceDigest } from "../bin/source-digest.js";
import { type CliResult, runNode } from "./support/cli.ts";

const ROOT = join(import.meta.dirname, "..");
const BIN = join(ROOT, "bin", "chat-gateway.js");
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  version: string;
  license: string;
  private?: boolean;
  bin: Record<string, string>;
  scripts: Record<string, string>;
};

/** What a clone does not have (installed, built or local), left out of the copy that is packed. */
const NOT_IN_A_CLONE = new Set([
  ".git",
  "node_modules",
  "dist",
  "data",
  ".bench",
  "test-results",
  "test-output",
  ".scratch",
]);

/** The environment of a child: this one without what a test run or the gateway's settings add. */
function childEnv(extra: Record<string, string> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of Object.keys(env))
    if (name.startsWith("npm_") || name.startsWith("GATEWAY_") || name.startsWith("NODE_")) delete env[name];
  for (const name of ["DATABASE_URL", "REDIS_URL", "PORT", "HOST", "LOG_LEVEL"]) delete env[name];
  // this Node first, for npm and the scripts it runs
  env.PATH = `${dirname(process.execPath)}${process.platform === "win32" ? ";" : ":"}${env.PATH ?? ""}`;
  return { ...env, ...extra };
}

const scratch: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}
/** gateways started and not yet stopped: a failed test must not leave one running */
const running = new Set<ChildProcess>();
after(() => {
  for (const child of running) child.kill("SIGKILL");
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("licence, version and changelog", () => {
  test("Apache-2.0: package.json says so, LICENSE is its full text, NOTICE names the bundled MIT code", () => {
    assert.equal(manifest.license, "Apache-2.0");
    const licence = readFileSync(join(ROOT, "LICENSE"), "utf8");
    assert.match(licence, /Apache License\s+Version 2\.0, January 2004/);
    for (let section = 1; section <= 9; section++)
      assert.match(licence, new RegExp(`\\n\\s*${section}\\. [A-Z]`));
    assert.match(licence, /END OF TERMS AND CONDITIONS/);
    const notice = readFileSync(join(ROOT, "NOTICE"), "utf8");
    assert.match(notice, /^chat-gateway\n/);
    assert.match(notice, /react-dom/);
    assert.match(notice, /test\/contracts/);
  });

  test("the package cannot be published by accident", () => {
    assert.equal(manifest.private, true);
  });

  test("the version has a dated section in the changelog, and SECURITY.md supports it", () => {
    const changelog = readFileSync(join(ROOT, "CHANGELOG.md"), "utf8");
    assert.match(changelog, /^## \[Unreleased\]$/m);
    const escaped = manifest.version.replaceAll(".", "\\.");
    assert.match(changelog, new RegExp(`^## \\[${escaped}\\] - \\d{4}-\\d{2}-\\d{2}$`, "m"));
    const [major, minor] = manifest.version.split(".");
    assert.match(
      readFileSync(join(ROOT, "SECURITY.md"), "utf8"),
      new RegExp(`\\| ${major}\\.${minor}\\.x\\b`),
    );
  });

  test("starting builds nothing: npm builds at install and pack (prepare), not at start", () => {
    assert.equal(manifest.scripts.prestart, undefined);
    assert.doesNotMatch(manifest.scripts.start!, /build|vite|tsc/);
    assert.match(manifest.scripts.prepare!, /scripts\/build\.ts/);
  });
});

describe("the command line", () => {
  let cwd: string;
  before(() => {
    cwd = tempDir("gw-release-cli-");
  });
  const run = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
    runNode(args, childEnv(env), { cwd });

  test("`chat-gateway --version` and `node src/main.ts --version` print package.json's version", async () => {
    assert.equal(manifest.bin["chat-gateway"], "bin/chat-gateway.js");
    for (const entry of [BIN, join(ROOT, "src", "main.ts")]) {
      const plain = await run([entry, "--version"]);
      assert.equal(plain.code, 0, plain.stderr);
      assert.equal(plain.stdout, `${manifest.version}\n`);
      const json = await run([entry, "--version", "--json"]);
      assert.deepEqual(json.json, { version: manifest.version });
    }
  });

  test("--version does not read the configuration, so a broken one does not hide it", async () => {
    const r = await run([BIN, "--version"], { GATEWAY_CONFIG: join(cwd, "missing.yaml") });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${manifest.version}\n`);
  });

  test("--help --json is one JSON document too", async () => {
    const r = await run([BIN, "--help", "--json"]);
    assert.equal(r.code, 0);
    assert.match(r.json?.usage, /^usage: chat-gateway <command>/);
  });

  test("serve --json: stdout is the one JSON document, the logs are on stderr", async () => {
    const gateway = await serve([BIN, "serve", "--json"], cwd, {
      GATEWAY_DATA_DIR: tempDir("gw-release-data-"),
    });
    const health = await fetch(`${gateway.origin}/healthz`);
    assert.equal(health.status, 200);
    const { stdout, stderr } = await gateway.stop();
    const lines = stdout.split("\n").filter(Boolean);
    assert.equal(lines.length, 1, `stdout:\n${stdout}`);
    assert.equal(JSON.parse(lines[0]!).url, `${gateway.origin}/v1`);
    assert.match(stderr, /"msg":"gateway listening"/);
    assert.match(stderr, /"route":"\/healthz"/);
    assert.match(stderr, /"msg":"gateway stopped"/);
  });
});

interface Served {
  origin: string;
  /** what the first line on stdout said */
  answer: { url: string; secrets_file: string | null };
  child: ChildProcess;
  /** SIGTERM, then everything it printed and its exit code */
  stop(): Promise<{ stdout: string; stderr: string; code: number | null }>;
}

/** Starts `node <args>` (a gateway with --json) on a free loopback port; resolves once it answered. */
async function serve(args: string[], cwd: string, env: Record<string, string>): Promise<Served> {
  const child = spawn(process.execPath, args, {
    cwd,
    env: childEnv({ HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  running.add(child);
  const exited = once(child, "exit") as Promise<[number | null]>;
  void exited.then(() => running.delete(child));
  const lines = createInterface({ input: child.stdout! });
  const first = new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    void exited.then(([code]) => reject(new Error(`exited (${code}) before its answer:\n${stderr}`)));
  });
  lines.on("line", (line) => {
    stdout += `${line}\n`;
  });
  const line = await first;
  let answer: Served["answer"] | undefined;
  try {
    answer = JSON.parse(line);
  } catch {}
  if (typeof answer?.url !== "string") {
    child.kill("SIGKILL");
    throw new Error(`the first line on stdout is not serve's answer: ${line}\nstderr:\n${stderr}`);
  }
  return {
    origin: answer.url.replace(/\/v1$/, ""),
    answer,
    child,
    async stop() {
      child.kill("SIGTERM");
      const [code] = await exited;
      return { stdout, stderr, code };
    },
  };
}

/** Every file under `dir`, relative to it, with "/" separators. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join("/"));
}

describe("the build step without dev dependencies", () => {
  let dir: string;
  before(() => {
    // the script (and the digest it writes) alone, where neither vite nor typescript can be found
    dir = tempDir("gw-release-nodev-");
    mkdirSync(join(dir, "scripts"));
    cpSync(join(ROOT, "scripts", "build.ts"), join(dir, "scripts", "build.ts"));
    cpSync(join(ROOT, "bin", "source-digest.js"), join(dir, "bin", "source-digest.js"), { recursive: true });
    mkdirSync(join(dir, "dist"));
  });

  test("`npm ci --omit=dev` (prepare): says so in one line and leaves dist/ alone", () => {
    const r = spawnSync(process.execPath, ["scripts/build.ts", "--prepare"], {
      cwd: dir,
      env: childEnv({ npm_command: "ci" }),
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stderr,
      /^chat-gateway: vite and typescript \(dev dependencies\) not installed: dist\/ left as it is/,
    );
    assert.equal(r.stderr.trim().split("\n").length, 1);
    assert.ok(existsSync(join(dir, "dist")));
  });

  test("`npm pack` (prepare) and `npm run build` fail rather than pack or leave an unbuilt gateway", () => {
    for (const [args, command] of [
      [["--prepare"], "pack"],
      [["--prepare"], "publish"],
      [[], "run"],
    ] as const) {
      const r = spawnSync(process.execPath, ["scripts/build.ts", ...args], {
        cwd: dir,
        env: childEnv({ npm_command: command }),
        encoding: "utf8",
      });
      assert.equal(r.status, 1, `${command}: ${r.stderr}`);
      assert.match(r.stderr, /build failed: vite and typescript not installed/);
    }
  });
});

describe("the package", () => {
  let work: string;
  /** the tarball's files, as npm listed them */
  let files: string[];
  /** the package unpacked, with links to the production dependencies only */
  let pkg: string;

  before(() => {
    work = tempDir("gw-release-pack-");
    // a copy of the repository as a clone has it, packed the way a release is
    const clone = join(work, "clone");
    cpSync(ROOT, clone, {
      recursive: true,
      filter: (source) => {
        const path = relative(ROOT, source);
        return !NOT_IN_A_CLONE.has(path.split(sep)[0]!) && !/\.(log|tgz)$/.test(path);
      },
    });
    symlinkSync(realpathSync(join(ROOT, "node_modules")), join(clone, "node_modules"), "dir");
    const packed = spawnSync("npm", ["pack", "--json", "--pack-destination", work], {
      cwd: clone,
      env: childEnv(),
      encoding: "utf8",
    });
    assert.equal(packed.status, 0, `npm pack failed:\n${packed.stderr}`);
    const [report] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    files = report.files.map((f) => f.path).sort();

    const unpacked = join(work, "unpacked");
    mkdirSync(unpacked);
    const tar = spawnSync("tar", ["-xzf", join(work, report.filename), "-C", unpacked], { encoding: "utf8" });
    assert.equal(tar.status, 0, tar.stderr);
    pkg = join(unpacked, "package");
    // What `npm install --omit=dev` gives it: the lockfile's packages not marked dev-only.
    const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { dev?: boolean }>;
    };
    for (const [path, entry] of Object.entries(lock.packages)) {
      const name = path.slice("node_modules/".length);
      if (!path.startsWith("node_modules/") || name.includes("/node_modules/") || entry.dev) continue;
      const installed = join(ROOT, "node_modules", name);
      if (!existsSync(installed)) continue; // an optional package of another platform
      mkdirSync(dirname(join(pkg, "node_modules", name)), { recursive: true });
      symlinkSync(realpathSync(installed), join(pkg, "node_modules", name), "dir");
    }
  });

  test("holds the command, the compiled gateway, the built console and the licence files", () => {
    for (const file of [
      "package.json",
      "README.md",
      "LICENSE",
      "NOTICE",
      "CHANGELOG.md",
      "SECURITY.md",
      "docs/install.md",
      "bin/chat-gateway.js",
      "dist/main.js",
      "dist/server.js",
      "dist/tokens/count-worker.js",
      "dist/console/index.html",
    ])
      assert.ok(files.includes(file), `${file} is in the package`);
    assert.ok(
      files.some((f) => /^dist\/console\/assets\/.+\.js$/.test(f)),
      "the console's script",
    );
    for (const lua of readdirSync(join(ROOT, "src", "ledger", "lua")))
      assert.ok(files.includes(`dist/ledger/lua/${lua}`), `the Redis ledger's ${lua} beside its module`);
  });

  test("holds no sources, tests, build tools or development files", () => {
    const dev = files.filter(
      (f) =>
        /^(src|test|bench|console|scripts|\.ci|node_modules)\//.test(f) ||
        /\.(ts|tsx)$/.test(f) ||
        /\.test\.js$/.test(f) ||
        /^(tsconfig.*|biome|package-lock)\.json$/.test(basename(f)),
    );
    assert.deepEqual(dev, []);
  });

  test("no compiled module names a .ts file, which Node would refuse under node_modules", () => {
    const named = filesUnder(join(pkg, "dist"))
      .filter((f) => f.endsWith(".js") && !f.startsWith("console/"))
      .flatMap((f) =>
        [...readFileSync(join(pkg, "dist", f), "utf8").matchAll(/["'`](\.{1,2}\/[^"'`\n]*\.ts)["'`]/g)].map(
          (m) => `${f}: ${m[1]}`,
        ),
      );
    assert.deepEqual(named, []);
  });

  test("its build names the source it was compiled from, which the launcher compares (decision 0042)", () => {
    assert.ok(files.includes(`dist/${DIGEST_FILE}`));
    assert.equal(
      readFileSync(join(pkg, "dist", DIGEST_FILE), "utf8").trim(),
      sourceDigest(join(work, "clone", "src")),
    );
  });

  test("`chat-gateway compile` has nothing to compile: the build runs without Node's compile cache", async () => {
    const r = await runNode([join(pkg, "bin", "chat-gateway.js"), "compile", "--json"], childEnv(), {
      cwd: work,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { cache: null });
  });

  test("`chat-gateway --version` runs from the package", async () => {
    const r = await runNode([join(pkg, "bin", "chat-gateway.js"), "--version"], childEnv(), { cwd: work });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${manifest.version}\n`);
  });

  test("its token counter starts its worker thread from the compiled file", async () => {
    const { TokenEstimator } = (await import(join(pkg, "dist", "tokens", "estimator.js"))) as {
      TokenEstimator: new () => {
        count(job: { text: string }): Promise<{ completion: number }>;
        running: boolean;
        close(): Promise<void>;
      };
    };
    const counter = new TokenEstimator();
    try {
      assert.ok((await counter.count({ text: "Hello from the packed gateway" })).completion > 0);
      // a worker that failed to start would have left the count to this thread, and stopped
      assert.equal(counter.running, true);
    } finally {
      await counter.close();
    }
  });

  test("serves the API and the built console with the production dependencies alone", async () => {
    const gateway = await serve([join(pkg, "bin", "chat-gateway.js"), "serve", "--json"], work, {
      GATEWAY_DATA_DIR: join(work, "data"),
    });
    let stopped: Awaited<ReturnType<Served["stop"]>> | undefined;
    try {
      assert.equal((await fetch(`${gateway.origin}/healthz`)).status, 200);
      const file = gateway.answer.secrets_file;
      assert.equal(typeof file, "string", "stdout is not a terminal: the first key is in the secrets file");
      const key = readFileSync(file!, "utf8").match(/sk-[A-Za-z0-9]{43}/)![0];
      const client = new OpenAI({ baseURL: gateway.answer.url, apiKey: key, maxRetries: 0 });
      const models = [];
      for await (const model of client.models.list()) models.push(model.id);
      assert.deepEqual(models, ["demo", "demo-embedding"]);
      const completion = await client.chat.completions.create({
        model: "demo",
        messages: [{ role: "user", content: "Hello!" }],
      });
      assert.match(completion.choices[0]!.message.content!, /demo model/);
      assert.ok(completion.usage!.total_tokens > 0);
      const page = await fetch(`${gateway.origin}/console/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type")!, /^text\/html/);
      assert.match(await page.text(), /<script type="module"[^>]* src="\/console\/assets\//);
    } finally {
      stopped = await gateway.stop();
    }
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.doesNotMatch(stopped.stderr, /console is not built/);
    assert.doesNotMatch(stopped.stderr, /"level":50/, "no error logged");
  });

  test("without a built console it starts anyway, says so once, and /console says how to build it", async () => {
    rmSync(join(pkg, "dist", "console"), { recursive: true });
    const gateway = await serve([join(pkg, "bin", "chat-gateway.js"), "serve", "--json"], work, {
      GATEWAY_DATA_DIR: join(work, "data"),
    });
    let stopped: Awaited<ReturnType<Served["stop"]>> | undefined;
    try {
      assert.equal((await fetch(`${gateway.origin}/healthz`)).status, 200);
      const page = await fetch(`${gateway.origin}/console/`);
      assert.equal(page.status, 503);
      assert.equal(((await page.json()) as { error: { code: string } }).error.code, "console_not_built");
    } finally {
      stopped = await gateway.stop();
    }
    assert.equal(stopped.code, 0, stopped.stderr);
    const warnings = stopped.stderr.split("\n").filter((l) => l.includes("the web console is not built"));
    assert.equal(warnings.length, 1, stopped.stderr);
    assert.match(warnings[0]!, /npm run build:console/);
  });
});
