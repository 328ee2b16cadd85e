// Installs the coding clients the conformance suite runs (test/agents/), at the versions
// pinned in versions.json, into a cache outside the repository: together they are about
// 750 MB, which `npm install` of the project must not bring to everyone. The folder is named
// by a hash of the pins, so bumping one installs beside the old and never mixes them; an
// install that completed is reused. Run by `npm run test:agents` (./run.ts) before the tests.
//
//   node test/agents/install.ts      # installs if needed, prints the folder
//
// Where: $CHAT_GATEWAY_AGENTS_DIR when set (used as is), else
// $XDG_CACHE_HOME/chat-gateway-agents/<hash>, else ~/.cache/chat-gateway-agents/<hash>
// (../support/pinned-packages.ts).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { isMain } from "../support/mock-provider.ts";
import { installPinned, nodePath, pinnedDir, readPins } from "../support/pinned-packages.ts";

/** The pinned packages, by npm name: the one place their versions are declared. */
export const VERSIONS = readPins(new URL("./versions.json", import.meta.url));

/** The clients the suite runs: their package and the command it installs. */
export const CLIENTS = {
  "claude-code": { package: "@anthropic-ai/claude-code", bin: "claude" },
  codex: { package: "@openai/codex", bin: "codex" },
  "gemini-cli": { package: "@google/gemini-cli", bin: "gemini" },
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
  return pinnedDir("chat-gateway-agents", "CHAT_GATEWAY_AGENTS_DIR", VERSIONS);
}

/** A client's command in an install folder. */
export function binOf(client: ClientName, dir = agentsDir()): string {
  return join(dir, "node_modules", ".bin", CLIENTS[client].bin);
}

/** The PATH the clients run with: the project's Node first (they need Node 22 or later). */
export const clientPath = nodePath;

/** Each client's command answers `--version` with its pinned version (throws naming the one that does not). */
function clientsAnswer(dir: string): void {
  for (const client of Object.keys(CLIENTS) as ClientName[]) {
    const check = spawnSync(binOf(client, dir), ["--version"], {
      encoding: "utf8",
      env: { ...process.env, PATH: clientPath() },
      timeout: 60_000,
    });
    if (check.status !== 0 || !check.stdout.includes(versionOf(client)))
      throw new Error(
        `${client}: \`${CLIENTS[client].bin} --version\` answered ${JSON.stringify(check.stdout.trim() || check.stderr.trim())}, not ${versionOf(client)}`,
      );
  }
}

/** The install folder, installing the pinned versions first when it does not hold them. */
export function installAgents(log?: (line: string) => void): string {
  return installPinned({
    name: "chat-gateway-agents",
    pins: VERSIONS,
    dir: agentsDir(),
    // the clients' install scripts place their native binaries
    scripts: true,
    check: (dir) => (Object.keys(CLIENTS) as ClientName[]).every((c) => existsSync(binOf(c, dir))),
    verify: clientsAnswer,
    ...(log ? { log } : {}),
  });
}

if (isMain(import.meta.url)) process.stdout.write(`${installAgents()}\n`);
