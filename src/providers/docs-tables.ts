// Renders the field tables of docs/providers.md from the rules each provider module declares
// (ProviderModule.fieldRules), so the documentation says what the code does and a new
// provider needs no line here. `npm run docs:providers` rewrites them in place;
// docs-tables.test.ts fails when they drift apart.
import { readFileSync, writeFileSync } from "node:fs";
import { PROVIDER_MODULES } from "./catalog.ts";
import { type FieldRules, rulesTable } from "./field-policy.ts";
import type { ProviderModule } from "./types.ts";

export const TABLES: Record<string, FieldRules> = Object.fromEntries(
  PROVIDER_MODULES.flatMap((m: ProviderModule) => (m.fieldRules ? [[m.type, m.fieldRules]] : [])),
);

const start = (type: string) =>
  `<!-- fields:${type}:start (generated from the adapter's rules by \`npm run docs:providers\`) -->`;
const end = (type: string) => `<!-- fields:${type}:end -->`;

/** The document with every provider's table replaced by the current one. */
export function withFieldTables(doc: string): string {
  let out = doc;
  for (const [type, rules] of Object.entries(TABLES)) {
    const from = out.indexOf(start(type));
    const to = out.indexOf(end(type));
    if (from === -1 || to === -1) throw new Error(`docs/providers.md has no markers for ${type}`);
    out = `${out.slice(0, from)}${start(type)}\n${rulesTable(rules)}\n${out.slice(to)}`;
  }
  return out;
}

if (import.meta.main) {
  const file = new URL("../../docs/providers.md", import.meta.url);
  writeFileSync(file, withFieldTables(readFileSync(file, "utf8")));
  console.log("docs/providers.md field tables updated");
}
