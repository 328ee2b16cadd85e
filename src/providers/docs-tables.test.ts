import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { FORWARDED_FIELDS } from "../domain/chat-request.ts";
import { TABLES, withFieldTables } from "./docs-tables.ts";

test("docs/providers.md carries the tables the adapters' rules render (run `npm run docs:providers`)", () => {
  const doc = readFileSync(new URL("../../docs/providers.md", import.meta.url), "utf8");
  assert.equal(withFieldTables(doc), doc);
});

test("every provider has a rule for every forwarded field", () => {
  for (const [type, rules] of Object.entries(TABLES))
    assert.deepEqual(Object.keys(rules).sort(), [...FORWARDED_FIELDS].sort(), type);
});
