// The configuration guide's example (docs/configuration-guide.md) is what operators copy: it
// must load as it stands, and the values it shows for the sections it spells out whole are the
// defaults the gateway runs on.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadConfig } from "./load.ts";

const GUIDE = readFileSync(new URL("../../docs/configuration-guide.md", import.meta.url), "utf8");

/** The first YAML block after the "## An example file" heading. */
function example(): string {
  const section = GUIDE.slice(GUIDE.indexOf("\n## An example file\n"));
  const block = /^```yaml\n([\s\S]*?)^```/m.exec(section);
  assert.ok(block, "the guide's example section has a YAML example");
  return block[1]!;
}

test("the configuration guide's example loads, and shows the defaults of the sections it spells out", () => {
  const dir = mkdtempSync(join(tmpdir(), "gw-readme-config-"));
  try {
    const file = join(dir, "gateway.yaml");
    writeFileSync(file, example());
    const shown = loadConfig({}, file);
    const defaults = loadConfig({}, undefined);
    for (const section of [
      "server",
      "store",
      "ledger",
      "log_level",
      "default_plan",
      "routing",
      "retention",
    ] as const)
      assert.deepEqual(shown[section], defaults[section], `${section}: the guide shows the defaults`);
    assert.ok(shown.models.some((m) => m.id === "demo"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
