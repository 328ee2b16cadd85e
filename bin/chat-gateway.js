#!/usr/bin/env node
// `chat-gateway …`: the command line of src/main.ts, and how `npm start`, the container image
// and the systemd unit run the gateway. A clone runs its TypeScript as it is; the packed
// package carries it compiled into dist/ (and no src/), because Node does not strip types from
// files under node_modules. Plain JavaScript, so an older Node gets a clear message instead of
// a syntax or file-extension error, and so the compile cache below is on before Node reads any
// TypeScript.
import { existsSync } from "node:fs";
import { constants, enableCompileCache } from "node:module";
import { fileURLToPath } from "node:url";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(`chat-gateway needs Node.js 24 or later; this is Node.js ${process.version}\n`);
  process.exit(1);
}

// Node's compile cache: each start after the first loads the modules as Node compiled them
// before, without stripping their types again. Stripping loads a WebAssembly build of swc that
// stays in memory: an idle instance measured 143 MB without the cache and 111 MB with it
// (decision 0039). The cache sits beside the code it caches, never in a shared temporary
// folder: whoever can write it can change what runs. Where the runtime user cannot write there
// (the container image, the systemd unit), `chat-gateway compile` fills it when the code is
// installed. NODE_COMPILE_CACHE (another folder) and NODE_DISABLE_COMPILE_CACHE are Node's own
// and read before this runs.
if (process.env.NODE_COMPILE_CACHE === undefined) {
  const cache = enableCompileCache(
    fileURLToPath(new URL("../node_modules/.cache/chat-gateway", import.meta.url)),
  );
  // the counting thread (src/tokens/estimator.ts) starts with this environment: it uses it too
  if (cache.status === constants.compileCacheStatus.ENABLED && cache.directory)
    process.env.NODE_COMPILE_CACHE = cache.directory;
}

const source = new URL("../src/main.ts", import.meta.url);
const entry = existsSync(source) ? source : new URL("../dist/main.js", import.meta.url);
const { main } = await import(entry.href);
await main(process.argv.slice(2));
