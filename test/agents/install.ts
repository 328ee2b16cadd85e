// Installs the coding clients the conformance suite runs (test/agents/), at the versions
// pinned in versions.json, into a cache outside the repository: together they are about
// 650 MB, which `npm install` of the project must not bring to everyone. The folder is named
// by a hash of the pins, so bumping one installs beside the old and never mixes them; an
// install that completed is reused. Run by `npm run test:agents` (./run.ts) before the tests.
//
//   node test/agents/install.ts      # installs if needed, prints the folder
//
// Where: $CHAT_GATEWAY_AGENTS_DIR when set (used as is), else
// $XDG_CACHE_HOME/chat-gateway-agents/<hash>, else ~/.cache/chat-gateway-agents/<hash>.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { isMain } from "../support/mock-provider.ts";

/** The pinned packages, by npm name: the one place their versions are declared. */
export const VERSIONS: Readonly<Record<string, string>> = JSON.parse(
  readFileSync(new URL("./versions.json", import.meta.url), "utf8"),
);

/** The clients the suite runs: their package and the command it installs. */
export const CLIENTS = {
  "claude-code": { package: "@anthropic-ai/claude-code", bin: "claude" },
  codex: { package: "@openai/codex", bin: "codex" },
} as const;

export type ClientName = keyof typeof CLIENTS;

/** A client's pinned version. */
export function versionOf(client: ClientName): string {
  const version = VERSIONS[CLIENTS[client].package];
  if (!version) throw new Error(`test/agents/versions.json pins no version of ${CLIENTS[client].package}`);
  return version;
}

/** The install folder: named by the pins and the platform, whose native binaries npm picks. */
export function agentsDir(): string {
  const override = process.env.CHAT_GATEWAY_AGENTS_DIR;
  if (override) return override;
  const hash = createHash("sha256")
    .update(JSON.stringify({ versions: VERSIONS, platform: process.platform, arch: process.arch }))
    .digest("hex")
    .slice(0, 12);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cache, "chat-gateway-agents", hash);
}

/** A client's command in an install folder. */
export function binOf(client: ClientName, dir = agentsDir()): string {
  return join(dir, "node_modules", ".bin", CLIENTS[client].bin);
}

/** The PATH the clients run with: the project's Node first (they need Node 22 or later). */
export function clientPath(): string {
  return [dirname(process.execPath), process.env.PATH ?? ""].join(":");
}

const STAMP = "installed.json";

/** Whether `dir` holds a completed install of exactly the pinned versions. */
function installed(dir: string): boolean {
  try {
    const stamp = JSON.parse(readFileSync(join(dir, STAMP), "utf8"));
    return (
      JSON.stringify(stamp.versions) === JSON.stringify(VERSIONS) &&
      (Object.keys(CLIENTS) as ClientName[]).every((c) => existsSync(binOf(c, dir)))
    );
  } catch {
    return false;
  }
}

/**
 * The install folder, installing the pinned versions first when it does not hold them. npm
 * installs into a folder of its own beside it, renamed when complete: an interrupted install
 * leaves no folder that looks complete.
 */
export function installAgents(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): string {
  const dir = agentsDir();
  if (installed(dir)) return dir;
  const staging = `${dir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(
    join(staging, "package.json"),
    `${JSON.stringify({ name: "chat-gateway-agents", private: true, dependencies: VERSIONS }, null, 2)}\n`,
  );
  log(
    `installing ${Object.entries(VERSIONS)
      .map(([p, v]) => `${p}@${v}`)
      .join(", ")} into ${dir}`,
  );
  // The clients' install scripts (Claude Code's places its native binary) run on the project's Node.
  const npm = spawnSync(
    "npm",
    ["install", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error", "--save-exact"],
    { cwd: staging, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, PATH: clientPath() } },
  );
  if (npm.status !== 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(`npm install of the pinned clients failed (exit ${npm.status ?? npm.signal})`);
  }
  for (const client of Object.keys(CLIENTS) as ClientName[]) {
    const check = spawnSync(binOf(client, staging), ["--version"], {
      encoding: "utf8",
      env: { ...process.env, PATH: clientPath() },
      timeout: 60_000,
    });
    if (check.status !== 0 || !check.stdout.includes(versionOf(client)))
      throw new Error(
        `${client}: \`${CLIENTS[client].bin} --version\` answered ${JSON.stringify(check.stdout.trim() || check.stderr.trim())}, not ${versionOf(client)}`,
      );
  }
  writeFileSync(join(staging, STAMP), `${JSON.stringify({ versions: VERSIONS }, null, 2)}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  renameSync(staging, dir);
  return dir;
}

if (isMain(import.meta.url)) process.stdout.write(`${installAgents()}\n`);
