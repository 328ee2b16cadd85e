// Renders the error table of docs/errors.md from the catalog. `npm run docs:errors` rewrites
// the table in place; errors/readme-table.test.ts fails when the two drift apart.
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

/** The page with its error table replaced by the current one. */
export function withErrorTable(page: string): string {
  const from = page.indexOf(START);
  const to = page.indexOf(END);
  if (from === -1 || to === -1) throw new Error("docs/errors.md has no error table markers");
  return page.slice(0, from) + renderErrorTable() + page.slice(to + END.length);
}

if (import.meta.main) {
  const file = new URL("../../docs/errors.md", import.meta.url);
  writeFileSync(file, withErrorTable(readFileSync(file, "utf8")));
  console.log("docs/errors.md error table updated");
}
