// Packages a suite runs at pinned versions without `npm install` of the project bringing them
// to everyone (the coding agents, test/agents/; the client libraries, test/clients/): installed
// into a cache outside the repository, in a folder named by a hash of the pins and the platform,
// so bumping one installs beside the old and never mixes them. npm installs into a staging
// folder beside it, renamed when complete and checked: an interrupted install leaves no folder
// that looks complete, and a completed one is reused.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export type Pins = Readonly<Record<string, string>>;

/** The pins of a versions.json beside a suite. */
export function readPins(url: URL): Pins {
  return JSON.parse(readFileSync(url, "utf8"));
}

/** `$<override>` when set, else `$XDG_CACHE_HOME/<name>/<hash>`, else `~/.cache/<name>/<hash>`. */
export function pinnedDir(name: string, override: string, pins: Pins): string {
  const chosen = process.env[override];
  if (chosen) return chosen;
  const hash = createHash("sha256")
    .update(JSON.stringify({ versions: pins, platform: process.platform, arch: process.arch }))
    .digest("hex")
    .slice(0, 12);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cache, name, hash);
}

/** The PATH packages install and run with: the project's Node first (they need a recent one). */
export function nodePath(): string {
  return [dirname(process.execPath), process.env.PATH ?? ""].join(":");
}

const STAMP = "installed.json";

export interface PinnedInstall {
  /** the package.json name of the install folder */
  name: string;
  pins: Pins;
  dir: string;
  /** run the packages' install scripts (a native binary placed by one) */
  scripts: boolean;
  /** what a completed folder holds besides the stamp (cheap: asked at every run) */
  check(dir: string): boolean;
  /** a fresh install's own check, once (the commands answer their versions); throws when it fails */
  verify?(dir: string): void;
  /** files written into the folder once npm is done */
  files?: Record<string, string>;
  log?: (line: string) => void;
}

/** Whether `dir` holds a completed install of exactly the pins. */
function installed(options: PinnedInstall, dir: string): boolean {
  try {
    const stamp = JSON.parse(readFileSync(join(dir, STAMP), "utf8"));
    return JSON.stringify(stamp.versions) === JSON.stringify(options.pins) && options.check(dir);
  } catch {
    return false;
  }
}

/** The install folder, installing the pins first when it does not hold them. */
export function installPinned(options: PinnedInstall): string {
  const { dir, pins } = options;
  if (installed(options, dir)) return dir;
  const log = options.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const staging = `${dir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  writeFileSync(
    join(staging, "package.json"),
    `${JSON.stringify({ name: options.name, private: true, type: "module", dependencies: pins }, null, 2)}\n`,
  );
  log(
    `installing ${Object.entries(pins)
      .map(([p, v]) => `${p}@${v}`)
      .join(", ")} into ${dir}`,
  );
  const npm = spawnSync(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      "--no-update-notifier",
      "--loglevel=error",
      "--save-exact",
      ...(options.scripts ? [] : ["--ignore-scripts"]),
    ],
    { cwd: staging, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, PATH: nodePath() } },
  );
  try {
    if (npm.status !== 0)
      throw new Error(`npm install of ${options.name} failed (exit ${npm.status ?? npm.signal})`);
    for (const [file, text] of Object.entries(options.files ?? {})) writeFileSync(join(staging, file), text);
    if (!options.check(staging))
      throw new Error(`${options.name}: the install does not hold the pinned versions`);
    options.verify?.(staging);
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  }
  writeFileSync(join(staging, STAMP), `${JSON.stringify({ versions: pins }, null, 2)}\n`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true });
  renameSync(staging, dir);
  return dir;
}

/** The version of `pkg` installed at the top of `dir`'s node_modules, or undefined. */
export function installedVersion(dir: string, pkg: string): string | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, "node_modules", pkg, "package.json"), "utf8")).version;
  } catch {
    return undefined;
  }
}
