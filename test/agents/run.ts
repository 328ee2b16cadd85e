// `npm run test:agents`: installs the pinned clients (./install.ts) if needed, then runs the
// conformance suite, one file at a time (each client run takes a core or two for seconds).
//
//   npm run test:agents                 # the whole matrix
//   npm run test:agents -- --record     # and (re)write test/fixtures/agents/ from the clients' requests
//   npm run test:agents -- codex        # one client's suite (claude-code, codex or gemini-cli)
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { CLIENTS, installAgents } from "./install.ts";

const args = process.argv.slice(2);
const record = args.includes("--record");
const unknown = args.filter((a) => a !== "--record" && !(a in CLIENTS));
if (unknown.length) {
  process.stderr.write(
    `test:agents: unknown argument ${unknown.join(" ")} (--record, ${Object.keys(CLIENTS).join(", ")})\n`,
  );
  process.exit(2);
}
const only = args.filter((a) => a in CLIENTS);
installAgents();
const files = (only.length ? only : Object.keys(CLIENTS)).map((c) =>
  fileURLToPath(new URL(`./${c}.test.ts`, import.meta.url)),
);
const run = spawnSync(
  process.execPath,
  ["--test", "--test-timeout=900000", "--test-concurrency=1", ...files],
  {
    stdio: "inherit",
    env: { ...process.env, ...(record ? { AGENTS_RECORD: "1" } : {}) },
  },
);
process.exit(run.status ?? 1);
