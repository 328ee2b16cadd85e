// The layers of src/ (docs/architecture.md) import downwards only: a module imports from its own
// folder and from folders above it in the page's table, never from one below. Shared types in
// the wrong home (the canonical request inside one client API, a view type inside the HTTP
// routes) show up here as an upward import, and the page cannot drift from the tree.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, test } from "node:test";

const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");

/** The table's first column, top to bottom: each entry a folder (`src/x/`) or the files named in one row. */
export function layersOf(page: string): string[][] {
  const rows: string[][] = [];
  for (const line of page.split("\n")) {
    const first = /^\|\s*(`src\/[^|]*)\|/.exec(line)?.[1];
    if (first) rows.push([...first.matchAll(/`src\/([^`]+)`/g)].map(([, name]) => name!.replace(/\/$/, "")));
  }
  return rows;
}

/** The unit a source file belongs to: its top folder under src/, or its own name for a file at the top. */
export function unitOf(file: string): string {
  return relative(SRC, file).split(sep)[0]!;
}

/** The relative specifiers a module imports or re-exports, statically or dynamically. */
export function importsOf(text: string): string[] {
  const found: string[] = [];
  for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g))
    found.push(spec!);
  return found;
}

/** The imports that go to a lower layer, as "file -> target". */
export function upwardImports(files: ReadonlyMap<string, string>, layers: string[][]): string[] {
  const rank = new Map<string, number>();
  layers.forEach((row, i) => {
    for (const unit of row) rank.set(unit, i);
  });
  const out: string[] = [];
  for (const [file, text] of files) {
    const from = rank.get(unitOf(file));
    for (const spec of importsOf(text)) {
      const target = resolve(dirname(file), spec);
      if (!target.startsWith(SRC + sep)) continue;
      const to = rank.get(unitOf(target));
      if (from === undefined || to === undefined) continue; // reported as missing from the page
      if (to > from) out.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)}`);
    }
  }
  return out;
}

function sources(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile() && /\.tsx?$/.test(entry.name)) {
      const path = join(entry.parentPath, entry.name);
      out.set(path, readFileSync(path, "utf8"));
    }
  return out;
}

const page = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
const layers = layersOf(page);

describe("the layers of src/", () => {
  test("docs/architecture.md names every folder and top-level file of src/, each once, and nothing else", () => {
    const listed = layers.flat();
    const tree = readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory() || /\.ts$/.test(e.name))
      .map((e) => e.name);
    assert.deepEqual([...listed].sort(), [...new Set(listed)].sort(), "a unit is listed twice");
    assert.deepEqual([...listed].sort(), tree.sort());
  });

  test("no module imports from a layer below its own (tests beside the code included)", () => {
    assert.deepEqual(upwardImports(sources(SRC), layers), []);
  });

  test("the check finds an upward import, a re-export and a dynamic import, and lets a downward one pass", () => {
    const file = (path: string) => join(SRC, path);
    const fake = new Map([
      [
        file("providers/x.ts"),
        'import type { A } from "../apis/types.ts";\nimport { B } from "../errors/index.ts";',
      ],
      [file("records/y.ts"), 'export { V } from "../http/routes/console/v.ts";'],
      [file("apis/z.ts"), 'const m = await import("../relay/review.ts");\nimport "./own.ts";'],
    ]);
    assert.deepEqual(upwardImports(fake, layers), [
      "src/providers/x.ts -> src/apis/types.ts",
      "src/records/y.ts -> src/http/routes/console/v.ts",
      "src/apis/z.ts -> src/relay/review.ts",
    ]);
  });
});
