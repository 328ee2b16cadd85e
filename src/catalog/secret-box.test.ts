import assert from "node:assert/strict";
import { test } from "node:test";
import { SecretBox, SecretBoxError } from "./secret-box.ts";

const KEY = "a-passphrase-of-at-least-thirty-two-characters";

test("a sealed value opens to itself and never holds the plain text", () => {
  const box = new SecretBox(KEY);
  const sealed = box.seal("sk-upstream-secret-123456");
  assert.ok(!sealed.includes("sk-upstream"));
  assert.notEqual(box.seal("sk-upstream-secret-123456"), sealed, "a fresh IV each time");
  assert.equal(new SecretBox(KEY).open(sealed), "sk-upstream-secret-123456");
});

test("another key, a tampered value or a short passphrase is refused by name", () => {
  const sealed = new SecretBox(KEY).seal("secret-value");
  assert.throws(() => new SecretBox(`${KEY}x`).open(sealed), /sealed under another GATEWAY_SECRET_KEY/);
  const parts = sealed.split(":");
  parts[4] = `${parts[4]!.slice(0, -2)}AA`;
  assert.throws(() => new SecretBox(KEY).open(parts.join(":")), /integrity check/);
  assert.throws(() => new SecretBox("short"), SecretBoxError);
  assert.equal(SecretBox.fromEnv({}), undefined);
});
