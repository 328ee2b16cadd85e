#!/usr/bin/env node
// `chat-gateway …`: the command line of src/main.ts. A clone runs its TypeScript as it is; the
// packed package carries it compiled into dist/ (and no src/), because Node does not strip
// types from files under node_modules. Plain JavaScript, so an older Node gets a clear
// message instead of a syntax or file-extension error.
import { existsSync } from "node:fs";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(`chat-gateway needs Node.js 24 or later; this is Node.js ${process.version}\n`);
  process.exit(1);
}

const source = new URL("../src/main.ts", import.meta.url);
const entry = existsSync(source) ? source : new URL("../dist/main.js", import.meta.url);
const { main } = await import(entry.href);
await main(process.argv.slice(2));
