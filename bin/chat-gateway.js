#!/usr/bin/env node
// `chat-gateway …`: the command line of src/main.ts, and how `npm start`, the container image
// and the systemd unit run the gateway: compiled into dist/ by `npm run build` (the packed
// package carries only that, since Node does not strip types from files under node_modules),
// or as TypeScript in a clone whose source changed since its build. Plain JavaScript, so an
// older Node gets a clear message instead of a syntax or file-extension error, and so the
// compile cache below is on before Node reads any TypeScript.
import { existsSync } from "node:fs";
import { constants, enableCompileCache } from "node:module";
import { fileURLToPath } from "node:url";
import { isBuildOf } from "./source-digest.js";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(`chat-gateway needs Node.js 24 or later; this is Node.js ${process.version}\n`);
  process.exit(1);
}

// Which code runs: the compiled JavaScript in dist/ whenever it is a build of this very source
// (a clone after `npm install`, whose `prepare` builds it; the image; the packed package, which
// has no source), otherwise the TypeScript in src/ (a clone whose source changed since its
// build). Loaded modules stay in memory for the life of the process, and the compiled ones
// cost least: an idle instance measured 97 MB on dist/ and 105 MB on src/ (decision 0042).
//
// Node's compile cache, for the TypeScript only: each start after the first loads the modules
// as Node compiled them before, without stripping their types again. Stripping loads a
// WebAssembly build of swc that stays in memory: 143 MB idle without the cache, 111 MB with it
// (decision 0039). Node keeps every cache entry it read in memory too, which the JavaScript
// has no need of: 3-5 MB. The cache sits beside the code it caches, never in a shared
// temporary folder: whoever can write it can change what runs. Where the runtime user cannot
// write there, `chat-gateway compile` fills it when the code is installed. NODE_COMPILE_CACHE
// (another folder) and NODE_DISABLE_COMPILE_CACHE are Node's own and read before this runs.
const root = new URL("../", import.meta.url);
const source = new URL("src/main.ts", root);
const compiled = new URL("dist/main.js", root);
const runsCompiled =
  existsSync(compiled) &&
  (!existsSync(source) ||
    isBuildOf(fileURLToPath(new URL("dist", root)), fileURLToPath(new URL("src", root))));
if (!runsCompiled && process.env.NODE_COMPILE_CACHE === undefined) {
  const cache = enableCompileCache(fileURLToPath(new URL("node_modules/.cache/chat-gateway", root)));
  // the counting thread (src/tokens/estimator.ts) starts with this environment: it uses it too
  if (cache.status === constants.compileCacheStatus.ENABLED && cache.directory)
    process.env.NODE_COMPILE_CACHE = cache.directory;
}

const { main } = await import((runsCompiled ? compiled : source).href);
await main(process.argv.slice(2));
