// A production install (`npm ci --omit=dev` in a clone, or the package installed) has only
// package.json's "dependencies": every module the gateway can load, from the command line's
// entry, the server's and the worker it starts by path, must import nothing but those, Node's
// built-ins and its own files. Read from the sources with their types stripped (what Node
// runs), so an import only for types counts for nothing and every other import counts, on
// whichever path it is taken.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { isBuiltin, stripTypeScriptTypes } from "node:module";
import { dirname, relative, resolve, sep } from "node:path";
import { test } from "node:test";

const ROOT = resolve(import.meta.dirname, "..");
const ENTRIES = ["src/main.ts", "src/server.ts"];
/** Modules that start a worker thread, and the worker's own entry (started by path, not imported). */
const WORKERS: Record<string, string> = { "src/tokens/estimator.ts": "src/tokens/count-worker.ts" };

const STATIC = /(?:^|[\s;})])(?:import|export)\s*(?:[\w$*{},\s]*?\sfrom\s*)?(["'])([^"'\n]+)\1/g;
const DYNAMIC = /\bimport\(\s*(["'`])([^"'`\n]+)\1\s*\)/g;
const DYNAMIC_COMPUTED = /\bimport\(\s*(?!["'`][^"'`\n]+["'`]\s*\))[^)\s]/g;
// a file read from a package (createRequire(…).resolve("pkg/data/…")) needs the package too
const REQUIRE = /(?:\brequire|\bcreateRequire\([^)]*\))(?:\.resolve)?\(\s*(["'])([^"'\n]+)\1\s*\)/g;

/** What a module loads when it runs: the specifiers of its imports and requires. */
export function loadedSpecifiers(typescript: string): { specifiers: string[]; computed: number } {
  const code = stripTypeScriptTypes(typescript);
  const specifiers = new Set<string>();
  for (const pattern of [STATIC, DYNAMIC, REQUIRE])
    for (const match of code.matchAll(pattern)) specifiers.add(match[2]!);
  return { specifiers: [...specifiers], computed: [...code.matchAll(DYNAMIC_COMPUTED)].length };
}

/** "@scope/name/sub" -> "@scope/name", "name/sub" -> "name" */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

interface Graph {
  /** files reached, relative to the repository */
  files: string[];
  /** package -> the files that load it */
  packages: Map<string, string[]>;
  problems: string[];
}

function runtimeGraph(): Graph {
  const seen = new Set<string>();
  const packages = new Map<string, string[]>();
  const problems: string[] = [];
  const queue = [...ENTRIES];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const { specifiers, computed } = loadedSpecifiers(readFileSync(resolve(ROOT, file), "utf8"));
    if (computed) problems.push(`${file}: an import() of a computed name, which this check cannot follow`);
    const worker = WORKERS[file];
    if (worker) queue.push(worker);
    for (const specifier of specifiers) {
      if (isBuiltin(specifier)) continue;
      if (specifier.startsWith(".")) {
        const target = relative(ROOT, resolve(ROOT, dirname(file), specifier))
          .split(sep)
          .join("/");
        if (!existsSync(resolve(ROOT, target))) problems.push(`${file}: ${specifier} does not exist`);
        else queue.push(target);
        continue;
      }
      const name = packageOf(specifier);
      packages.set(name, [...(packages.get(name) ?? []), file]);
    }
  }
  for (const file of seen)
    if (!WORKERS[file] && readFileSync(resolve(ROOT, file), "utf8").includes("new Worker("))
      problems.push(`${file} starts a worker that WORKERS does not name`);
  return { files: [...seen].sort(), packages, problems };
}

const manifest = JSON.parse(readFileSync(resolve(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

test("the guard counts what runs and nothing that is only a type", () => {
  const source = `
    import type { Logger } from "types-only";
    import { type A, type B } from "still-loaded";
    import def, { named as other } from "default-and-named";
    import * as ns from "namespace";
    import "side-effect";
    import {
      one,
      two,
    } from "multi-line";
    export * from "./re-exported.ts";
    export { x } from "./named-re-export.ts";
    export type { T } from "type-re-export";
    type Lib = typeof import("typeof-only");
    const later = await import("./dynamic.ts");
    const table = createRequire(import.meta.url)("required-lazily");
    const file = createRequire(import.meta.url).resolve("data-read/data/file.bin");
    const local: Logger = def as unknown as Logger;
    const s = "import nothing from here";
  `;
  const { specifiers, computed } = loadedSpecifiers(source);
  assert.deepEqual(specifiers.sort(), [
    "./dynamic.ts",
    "./named-re-export.ts",
    "./re-exported.ts",
    "data-read/data/file.bin",
    "default-and-named",
    "multi-line",
    "namespace",
    "required-lazily",
    "side-effect",
    "still-loaded",
  ]);
  assert.equal(computed, 0);
  assert.equal(loadedSpecifiers("const m = await import(name);").computed, 1);
});

test("the gateway at run time loads only its dependencies, Node's built-ins and its own modules", () => {
  const graph = runtimeGraph();
  assert.deepEqual(graph.problems, []);
  const outside = graph.files.filter((f) => !f.startsWith("src/") || f.endsWith(".test.ts"));
  assert.deepEqual(outside, [], "no test, benchmark or script module is reached from the entries");
  assert.ok(graph.files.includes("src/tokens/count-worker.ts"), "the counting worker is part of the graph");
  const notDependencies = [...graph.packages]
    .filter(([name]) => !(name in manifest.dependencies))
    .map(
      ([name, files]) =>
        `${name} (${name in manifest.devDependencies ? "a devDependency" : "not in package.json"}): ${files.join(", ")}`,
    );
  assert.deepEqual(notDependencies, [], "every package the gateway loads is in dependencies");
});

test("every dependency is one the gateway loads (a test or build tool belongs in devDependencies)", () => {
  const loaded = runtimeGraph().packages;
  assert.deepEqual(
    Object.keys(manifest.dependencies).filter((name) => !loaded.has(name)),
    [],
  );
});
