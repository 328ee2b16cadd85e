// The commands of the documentation, run as written: every sh, bash, shell or console block of
// README.md and docs/*.md runs in bash from the repository's folder, against a gateway started
// the way the README starts it (the embedded defaults, a new data folder), and must exit 0. A
// block that cannot run on a test machine (it installs, serves in the foreground, needs a
// cluster or a client application) says so on the line before it,
// `<!-- not-run: the reason -->`, and is listed as skipped with that reason: no block is left
// out silently.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { runCli } from "./support/cli.ts";
import { type ShellBlock, shellBlocks } from "./support/doc-blocks.ts";
import { firstKey, type Running, serve, stop } from "./support/main-process.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The documents whose commands are run: the README and whatever docs/ holds. */
const DOCUMENTS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];

/** A block that runs longer is taken to wait for ever (a server in the foreground): it fails. */
const HANG_MS = 120_000;

/**
 * Commands never run here, whatever their block: they change the checkout's packages, run the
 * suite (this test among it), or serve until stopped; or they act on the machine or on an
 * installation's files and services (containers, clusters, system services, databases, files
 * removed or replaced), which a test must not touch. Their blocks need a not-run annotation.
 */
const NEVER_RUN =
  /\bnpm (install|i|ci|test|start)\b|\bnpm run (test|bench|soak)|(^|[\s;&|(])(sudo|docker|podman|buildah|kubectl|helm|systemctl|journalctl|pg_dump|pg_restore|psql|redis-cli|sqlite3|rm|mv|cp|claude|codex)(\s|$)/;

function neverRun(script: string): string | undefined {
  return script
    .split("\n")
    .map((line) => line.replace(/#.*$/, ""))
    .find((line) => NEVER_RUN.test(line))
    ?.trim();
}

/** What the docs write for what only a running installation has. */
const DOCUMENTED = { origin: "http://127.0.0.1:8080", key: "sk-…", keyId: "KEY_ID" };

/**
 * What a reader of the docs has: a gateway on its first start, the key it printed, and an
 * account with a key whose id stands for KEY_ID: `acme`, the docs' example, unless the page
 * creates it itself.
 */
interface World {
  origin: string;
  key: string;
  keyId: string;
  env: Record<string, string>;
  close(): Promise<void>;
}

/** `account`: the account KEY_ID's key is made in (the docs' `acme`, unless the page makes it itself) */
async function startWorld(account = "docs-reader"): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), "gw-docs-"));
  const env: Record<string, string> = {
    ...(Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) =>
          !/^(GATEWAY_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|LOG_LEVEL$|NODE_TEST_CONTEXT$|NODE_OPTIONS$)/.test(
            name,
          ),
      ),
    ) as Record<string, string>),
    // `node` and `npm` find the Node the tests run on first, as `npm run` finds the dev dependency
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
    GATEWAY_DATA_DIR: dir,
    npm_config_update_notifier: "false",
  };
  let gateway: Running | undefined;
  try {
    gateway = await serve({ ...env, PORT: "0", LOG_LEVEL: "info" }, [], { cwd: ROOT, inherit: false });
    const key = await firstKey(gateway);
    const cli = async (args: string[]) => {
      const r = await runCli([...args, "--json"], { GATEWAY_DATA_DIR: dir }, { cwd: dir });
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stdout}${r.stderr}`);
      return r.json;
    };
    await cli(["accounts", "create", "--name", account]);
    const readerKey = await cli(["keys", "create", "--account", account, "--name", "docs"]);
    return {
      origin: gateway.url,
      key,
      keyId: readerKey.id,
      env: { ...env, PASSWORD: randomBytes(12).toString("base64url"), GATEWAY_KEY: key },
      async close() {
        await stop(gateway!);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    if (gateway) await stop(gateway);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** The block with the documented placeholders replaced by what the world has. */
function substituted(script: string, world: Pick<World, "origin" | "key" | "keyId">): string {
  return script
    .replaceAll(DOCUMENTED.origin, world.origin)
    .replaceAll(DOCUMENTED.key, world.key)
    .replaceAll(DOCUMENTED.keyId, world.keyId);
}

/**
 * Runs a block in bash from the repository's folder: any failing command fails it, a curl
 * refused with an HTTP error status too (as a reader would see it fail).
 */
function runBlock(script: string, world: World): Promise<{ code: number | null; output: string }> {
  const prelude = [
    "set -eo pipefail",
    'curl() { command curl --fail-with-body --silent --show-error "$@"; }',
  ];
  const bash = spawn("bash", ["-c", [...prelude, substituted(script, world)].join("\n")], {
    cwd: ROOT,
    env: world.env,
    stdio: ["ignore", "pipe", "pipe"],
    // its own process group, so a hang is ended with everything the block started
    detached: true,
  });
  let output = "";
  for (const stream of [bash.stdout, bash.stderr])
    stream.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
    });
  const hang = setTimeout(() => {
    output += `\n(still running after ${HANG_MS / 1000} s: ended)`;
    try {
      process.kill(-bash.pid!, "SIGKILL");
    } catch {
      // the group ended meanwhile
    }
  }, HANG_MS);
  return new Promise((resolve, reject) => {
    bash.once("error", reject);
    bash.once("close", (code) => {
      clearTimeout(hang);
      resolve({ code, output });
    });
  });
}

for (const document of DOCUMENTS) {
  const { blocks, problems } = shellBlocks(readFileSync(join(ROOT, document), "utf8"));
  describe(`the commands of ${document}`, () => {
    it("are all either run or annotated `<!-- not-run: reason -->`", () => {
      assert.deepEqual(problems, []);
    });
    const runnable = blocks.filter((b) => b.notRun === undefined);
    let world: World | undefined;
    if (runnable.length) {
      before(async () => {
        const makesAcme = runnable.some((b) => /accounts create --name acme\b/.test(b.script));
        world = await startWorld(makesAcme ? "docs-reader" : "acme");
      });
      after(async () => world?.close());
    }
    for (const block of blocks) {
      const name = `line ${block.line}: ${firstLine(block)}`;
      if (block.notRun !== undefined) it(name, { skip: `not run here: ${block.notRun}` }, () => {});
      else
        it(name, async () => {
          const never = neverRun(block.script);
          assert.equal(never, undefined, `${document}:${block.line} runs \`${never}\`: annotate it not-run`);
          const r = await runBlock(block.script, world!);
          assert.equal(
            r.code,
            0,
            `${document}:${block.line} failed (exit ${r.code})\n--- block\n${block.script}\n--- output\n${r.output}`,
          );
        });
    }
  });
}

function firstLine(block: ShellBlock): string {
  const line = block.script.split("\n").find((l) => l.trim() && !l.trim().startsWith("#")) ?? "";
  return line.length > 60 ? `${line.slice(0, 57)}…` : line;
}

describe("running a block", () => {
  let world: World;
  before(async () => {
    world = await startWorld();
  });
  after(() => world.close());

  it("sends the documented request to the test gateway, with its key for the placeholder", async () => {
    const r = await runBlock('curl http://127.0.0.1:8080/v1/models -H "Authorization: Bearer sk-…"', world);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /"id":"demo"/);
  });

  it("fails when the gateway refuses the request", async () => {
    const r = await runBlock(
      'curl http://127.0.0.1:8080/v1/models -H "Authorization: Bearer sk-wrong"',
      world,
    );
    assert.notEqual(r.code, 0);
    assert.match(r.output, /invalid_api_key/);
  });

  it("fails at the first command that fails, in a pipe too", async () => {
    const r = await runBlock("false | cat\necho reached", world);
    assert.notEqual(r.code, 0);
    assert.doesNotMatch(r.output, /reached/);
  });

  it("never runs what installs, runs the suite or serves in the foreground", () => {
    assert.equal(neverRun("npm install && npm start"), "npm install && npm start");
    assert.equal(neverRun("PORT=8081 npm start &"), "PORT=8081 npm start &");
    assert.equal(neverRun("npm run test:clients"), "npm run test:clients");
    assert.equal(neverRun("npm run gateway -- keys list --account acme  # not npm test"), undefined);
  });

  it("never runs what acts on the machine, its services or an installation's files", () => {
    for (const line of [
      "sudo install -m 0644 unit /etc/systemd/system/",
      "docker compose up -d",
      "kubectl apply -f x.yaml",
      "systemctl stop chat-gateway",
      "rm -f data/gateway.sqlite-wal",
      "cp /backups/a.sqlite data/gateway.sqlite",
      'pg_dump -Fc -f out.dump "$DATABASE_URL"',
      "x && redis-cli DEL gateway:epoch",
      "claude",
    ])
      assert.equal(neverRun(line), line);
    assert.equal(neverRun("curl -s http://127.0.0.1:8080/v1/models  # no docker here"), undefined);
    assert.equal(neverRun("node src/main.ts keys list --json | jq ."), undefined);
  });
});
