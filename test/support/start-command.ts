// The Node flags the gateway runs with, as `npm start` gives them (package.json): the image's
// CMD and the systemd unit carry the same (test/packaging.test.ts), and the benchmark starts
// its gateways with them, so that it measures the process operators run.
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  scripts: { start: string };
};

/** What `npm start` runs: the launcher that turns the compile cache on, then src/main.ts. */
export const START_ENTRY = "bin/chat-gateway.js";

/** `node <flags> bin/chat-gateway.js serve`: the flags. */
export const START_FLAGS: readonly string[] = (() => {
  const words = pkg.scripts.start.split(/\s+/);
  const entry = words.indexOf(START_ENTRY);
  if (words[0] !== "node" || entry < 0 || words.slice(entry + 1).join(" ") !== "serve")
    throw new Error(`npm start is not "node [flags] ${START_ENTRY} serve": ${pkg.scripts.start}`);
  return words.slice(1, entry);
})();
