// `npm run test:clients`: installs the pinned client libraries (./install.ts) if needed, then
// runs the client-library suite, one file per library, two at a time.
//
//   npm run test:clients                # every library
//   npm run test:clients -- langchain   # one library's file (ai-sdk, openai-agents, langchain, mastra, llamaindex)
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { installClients } from "./install.ts";

const here = fileURLToPath(new URL(".", import.meta.url));
const libraries = readdirSync(here)
  .filter((f) => f.endsWith(".test.ts"))
  .map((f) => f.slice(0, -".test.ts".length))
  .sort();
const args = process.argv.slice(2);
const unknown = args.filter((a) => !libraries.includes(a));
if (unknown.length) {
  process.stderr.write(`test:clients: unknown argument ${unknown.join(" ")} (${libraries.join(", ")})\n`);
  process.exit(2);
}
installClients();
const files = (args.length ? args : libraries).map((l) => `${here}${l}.test.ts`);
const run = spawnSync(
  process.execPath,
  ["--test", "--test-timeout=900000", "--test-concurrency=2", ...files],
  { stdio: "inherit" },
);
process.exit(run.status ?? 1);
