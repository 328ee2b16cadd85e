// Builds what the packed package runs: the web console (vite, into dist/console) and the
// gateway compiled to JavaScript (tsc, into dist/, with the files it reads beside its modules),
// since Node does not strip types from files under node_modules; bin/chat-gateway.js runs it
// while it is a build of the source beside it (the digest written last). `npm run build` runs
// it; so does npm's `prepare`, which runs on `npm install` in a clone, on `npm pack` / `npm publish`
// and when npm installs the package from git. Starting the gateway never builds anything.
//
//   node scripts/build.ts            build, or fail
//   node scripts/build.ts --prepare  the same, except that without the dev dependencies (an
//                                    `npm ci --omit=dev`) it says so and leaves dist/ as it is
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { DIGEST_FILE, sourceDigest } from "../bin/source-digest.js";

const ROOT = resolve(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");
/** Files of src/ the compiled modules read at run time, copied beside them. */
export const RUNTIME_ASSETS = ["ledger/lua"];
/** Commands whose output is the package itself: never without a build. */
const PACKING = new Set(["pack", "publish"]);

const require = createRequire(import.meta.url);

/** The script of `pkg`'s `name` bin, or undefined when the package is not installed. */
function binOf(pkg: string, name: string): string | undefined {
  let manifest: string;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    return undefined;
  }
  const { bin } = JSON.parse(readFileSync(manifest, "utf8")) as { bin: string | Record<string, string> };
  return join(dirname(manifest), typeof bin === "string" ? bin : bin[name]!);
}

function run(script: string, args: string[]): void {
  const result = spawnSync(process.execPath, [script, ...args], { cwd: ROOT, stdio: "inherit" });
  if (result.status !== 0) {
    console.error(`build failed: ${[script, ...args].join(" ")} exited ${result.status ?? result.signal}`);
    process.exit(1);
  }
}

function build(): void {
  const vite = binOf("vite", "vite");
  const tsc = binOf("typescript", "tsc");
  if (!vite || !tsc) {
    const missing = [!vite && "vite", !tsc && "typescript"].filter(Boolean).join(" and ");
    const command = process.env.npm_command;
    if (process.argv.includes("--prepare") && !PACKING.has(command ?? "")) {
      console.error(
        `chat-gateway: ${missing} (dev dependencies) not installed: dist/ left as it is; ` +
          "build with `npm ci && npm run build` before `npm prune --omit=dev` (docs/install.md)",
      );
      return;
    }
    console.error(`build failed: ${missing} not installed (run \`npm ci\` first)`);
    process.exit(1);
  }
  // of the source as it is before compiling: one edited meanwhile does not match the build
  const digest = sourceDigest(join(ROOT, "src"));
  // vite empties dist/console itself; the rest of dist/ is the previous compile, which may hold
  // modules since deleted
  run(vite, ["build", "console", "--logLevel", "warn"]);
  for (const entry of existsSync(DIST) ? readdirSync(DIST) : [])
    if (entry !== "console") rmSync(join(DIST, entry), { recursive: true, force: true });
  // emit only: `npm run check` type-checks, and erasable syntax compiles the same either way
  run(tsc, ["-p", "tsconfig.build.json", "--noCheck"]);
  for (const asset of RUNTIME_ASSETS)
    cpSync(join(ROOT, "src", asset), join(DIST, asset), { recursive: true, errorOnExist: false });
  // last: a build cut short leaves no digest, and the launcher runs the source instead
  writeFileSync(join(DIST, DIGEST_FILE), `${digest}\n`);
}

if (import.meta.main) build();
