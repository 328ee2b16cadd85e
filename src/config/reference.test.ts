import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { ENV_FIELDS, loadConfig } from "./load.ts";
import { referenceTables, undescribed, withReference } from "./reference.ts";

const doc = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
const rows = referenceTables().flatMap((t) => t.rows);

test("docs/configuration.md carries the reference the schema renders (run `npm run docs:config`)", () => {
  const want = withReference(doc).split("\n");
  const have = doc.split("\n");
  const line = want.findIndex((text, i) => text !== have[i]);
  // the first line that differs, not the whole document
  assert.ok(
    line === -1 && want.length === have.length,
    `line ${line + 1}:\n  documented: ${have[line]}\n  the schema: ${want[line]}`,
  );
});

test("every field of the configuration has a description (`.describe()` in its schema)", () => {
  assert.deepEqual(undescribed(), []);
});

test("each documented default is the value the gateway runs on when the field is left out", () => {
  const config = loadConfig({}, undefined);
  const checked = rows.filter((r) => !r.path.includes("[]") && r.default.startsWith("`"));
  assert.ok(checked.length > 50, `${checked.length} defaults checked`);
  for (const row of checked) {
    const value = row.path.split(".").reduce((v: any, key) => v[key], config);
    const shown = Array.isArray(value) ? `[${value.join(", ")}]` : String(value);
    assert.equal(row.default, `\`${shown}\``, row.path);
  }
});

test("every provider type documents the fields every upstream shares, such as its timeouts", () => {
  const timeouts = rows.filter((r) => r.path === "providers[].timeouts.connect_ms");
  assert.equal(timeouts.length, 4, "openai-compatible, anthropic, gemini and azure-openai");
  for (const row of timeouts) assert.equal(row.default, "`5000`");
  assert.ok(rows.some((r) => r.path === "providers[].deny" && r.default === "`[oauth-*, context-1m-*]`"));
});

test("each environment variable is listed beside a field the reference documents", () => {
  for (const { variable, path } of ENV_FIELDS) {
    assert.ok(
      rows.some((r) => r.path === path.join(".")),
      `${variable}: ${path.join(".")} is documented`,
    );
    assert.match(doc, new RegExp(`\\| \`${path.join("\\.")}\` \\|[^\\n]*\\| \`${variable}\` \\|`));
  }
});
