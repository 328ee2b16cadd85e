import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { parse } from "yaml";
import { configSchema } from "../config/cross-check.ts";
import { EMBEDDED_DEFAULTS } from "../config/load.ts";
import { catalogOf, composeConfig, issueParam } from "./compose.ts";

/** The configuration guide's example file: every section, the richest config the docs show. */
function guideExample(): unknown {
  const guide = readFileSync(new URL("../../docs/configuration-guide.md", import.meta.url), "utf8");
  const block = /^```yaml\n([\s\S]*?)^```/m.exec(guide.slice(guide.indexOf("\n## An example file\n")));
  assert.ok(block, "the guide has a yaml example");
  return parse(block[1]!);
}

test("the schema is idempotent on its own output, so a parsed catalog is valid input to store and compose", () => {
  for (const raw of [EMBEDDED_DEFAULTS, guideExample()]) {
    const once = configSchema.parse(raw);
    const composed = composeConfig(once, catalogOf(once));
    assert.ok(composed.ok);
    assert.deepEqual(composed.config, once);
  }
});

test("an issue is named within the entry changed, or from the catalog's top for another entry", () => {
  const config = configSchema.parse(EMBEDDED_DEFAULTS);
  const data = catalogOf(config);
  data.models[0] = { ...data.models[0]!, pricing: { input: -1 } };
  let result = composeConfig(config, data);
  assert.ok(!result.ok);
  assert.equal(issueParam(result.issues[0]!, data, "models", "demo"), "pricing.input");
  const without = { ...catalogOf(config), models: [{ id: "other", provider: "demo" }] };
  result = composeConfig(config, without);
  assert.ok(!result.ok);
  assert.equal(issueParam(result.issues[0]!, without, "models", "demo"), "plans[0].models[0]");
  assert.match(result.issues[0]!.message, /unknown model "demo"/);
});
