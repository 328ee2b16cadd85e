import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { catalog } from "./catalog.ts";
import { renderErrorTable, withErrorTable } from "./readme-table.ts";

const page = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");

describe("the error table of docs/errors.md", () => {
  it("is the table the catalog renders (run `npm run docs:errors` after changing the catalog)", () => {
    assert.ok(
      page.includes(renderErrorTable()),
      "docs/errors.md's error table differs from src/errors/catalog.ts",
    );
    assert.equal(withErrorTable(page), page);
  });

  it("lists every catalog entry with its status, type and code", () => {
    for (const e of Object.values(catalog))
      assert.ok(page.includes(`| ${e.status} | \`${e.type}\` | \`${e.code}\` |`), `${e.code} is documented`);
  });

  it("uses distinct codes for each refusal of a key or account", () => {
    const codes = [
      "missing_api_key",
      "invalid_api_key",
      "key_disabled",
      "account_disabled",
      "key_limit_exceeded",
      "quota_exceeded",
    ].map((n) => catalog[n as keyof typeof catalog].code);
    assert.equal(new Set(codes).size, codes.length);
  });
});
