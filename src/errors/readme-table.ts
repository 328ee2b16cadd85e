// Renders the README's error table from the catalog. `npm run docs:errors` rewrites the
// table in place; errors/readme-table.test.ts fails when the two drift apart.
import { readFileSync, writeFileSync } from "node:fs";
import { type CatalogEntry, catalog } from "./catalog.ts";

export const START = "<!-- errors:start (generated from src/errors/catalog.ts by `npm run docs:errors`) -->";
export const END = "<!-- errors:end -->";

export function renderErrorTable(): string {
  const rows = Object.values(catalog).map(
    (e: CatalogEntry) => `| ${e.status} | \`${e.type}\` | \`${e.code}\` | ${e.when} | ${retryCell(e)} |`,
  );
  return [START, "| status | type | code | when | retry |", "|---|---|---|---|---|", ...rows, END].join("\n");
}

function retryCell(e: CatalogEntry): string {
  if (e.retry === "never") return "`x-should-retry: false`";
  if (typeof e.retry === "number") return `\`retry-after: ${e.retry}\``;
  return e.status === 429 ? "`retry-after`" : "";
}

/** The README with its error table replaced by the current one. */
export function withErrorTable(readme: string): string {
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  if (from === -1 || to === -1) throw new Error("README has no error table markers");
  return readme.slice(0, from) + renderErrorTable() + readme.slice(to + END.length);
}

if (import.meta.main) {
  const file = new URL("../../README.md", import.meta.url);
  writeFileSync(file, withErrorTable(readFileSync(file, "utf8")));
  console.log("README error table updated");
}
