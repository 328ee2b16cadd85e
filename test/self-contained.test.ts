// A fresh clone runs its tests and scripts on its own: no source, test, script or config names a
// path outside the repository (such as a contract file beside CI's checkout, which a user's clone
// does not have). Relative paths are resolved from the file that names them; the ones that climb
// past the repository's root fail here.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import { test } from "node:test";

const ROOT = resolve(import.meta.dirname, "..");
/** what a clone does not hold (installed or built) or is not ours to check */
const SKIPPED_DIRS = new Set([
  ".git",
  "node_modules",
  "dist",
  "data",
  ".bench",
  "test-results",
  "test-output",
]);
const SKIPPED_FILES = new Set(["package-lock.json"]);
const CHECKED_EXTENSIONS = new Set([
  ".ts",
  ".tsx",
  ".js",
  ".mjs",
  ".cjs",
  ".lua",
  ".json",
  ".sh",
  ".yml",
  ".yaml",
]);

/** The files to check: sources, tests, scripts and configs, and the extension-less CI scripts. */
function files(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) out.push(...files(path));
    } else if (
      entry.isFile() &&
      !SKIPPED_FILES.has(entry.name) &&
      (CHECKED_EXTENSIONS.has(extname(entry.name)) || relative(ROOT, dir) === ".ci")
    )
      out.push(path);
  }
  return out;
}

/** A quoted relative path ("./x", "../x", ".."), or a run of ".." arguments (join(dir, "..", "..")). */
const RELATIVE_LITERAL = /(["'`])(\.\.?(?:\/[^"'`\s]*)?)\1/g;
const DOTDOT_ARGUMENTS = /(["'])\.\.\1(?:\s*,\s*(["'])\.\.\2)*/g;
/** names of places beside the repository, however they are spelled */
const OUTSIDE_NAMES = /\.\.\/+shared\b|["']\.\.["']\s*,\s*["']shared["']/;

/** The relative paths in `text` that lead outside ROOT from `file`'s folder. */
export function pathsOutside(file: string, text: string): string[] {
  const found = new Set<string>();
  const outside = (path: string) => {
    const rel = relative(ROOT, resolve(dirname(file), path));
    return rel === ".." || rel.startsWith(`..${sep}`);
  };
  for (const [, , path] of text.matchAll(RELATIVE_LITERAL)) if (outside(path!)) found.add(path!);
  for (const [run] of text.matchAll(DOTDOT_ARGUMENTS)) {
    const climbs = run.match(/\.\./g)!.length;
    if (outside(Array.from({ length: climbs }, () => "..").join("/"))) found.add(run);
  }
  for (const [name] of text.matchAll(new RegExp(OUTSIDE_NAMES, "g"))) found.add(name);
  return [...found];
}

test("the guard sees paths that climb out of the repository, and lets those inside pass", () => {
  const file = join(ROOT, "test", "support", "x.ts");
  assert.deepEqual(pathsOutside(file, `new URL("../../../shared/contracts/a.json", import.meta.url)`), [
    "../../../shared/contracts/a.json",
    "../shared",
  ]);
  assert.deepEqual(pathsOutside(file, `join(import.meta.dirname, "..", "..", "..", "x")`), [
    '"..", "..", ".."',
  ]);
  assert.deepEqual(pathsOutside(join(ROOT, "test", "x.ts"), `join(import.meta.dirname, "..", "shared")`), [
    '"..", "shared"',
  ]);
  assert.deepEqual(
    pathsOutside(file, `import { a } from "../../src/a.ts"; new URL("../contracts/b.json")`),
    [],
  );
  assert.deepEqual(pathsOutside(file, `join(import.meta.dirname, "..", "..", "src")`), []);
});

test("no file of the repository names a path outside it", () => {
  const offenders: string[] = [];
  // this file's own examples above are the exception
  for (const file of files(ROOT).filter((f) => f !== import.meta.filename)) {
    const paths = pathsOutside(file, readFileSync(file, "utf8"));
    if (paths.length > 0) offenders.push(`${relative(ROOT, file)}: ${paths.join(", ")}`);
  }
  assert.deepEqual(offenders, []);
});
