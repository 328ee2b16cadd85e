#!/usr/bin/env node
// CLI entry: `chat-gateway` (bin/chat-gateway.js) or `node src/main.ts`; the commands are in
// src/cli/run.ts. This module imports nothing else before src/lib/young-generation.ts has run:
// Node reads and compiles every module a module imports statically before it runs any of them,
// and reading the program's modules alone grew V8's young generation to its limit.
import "./lib/young-generation.ts";

/** Runs the command line; bin/chat-gateway.js calls it, as does `node src/main.ts`. */
export async function main(argv: string[]): Promise<void> {
  const { runCli } = await import("./cli/run.ts");
  const code = await runCli(argv);
  if (code >= 0) process.exitCode = code;
}

if (import.meta.main) await main(process.argv.slice(2));
