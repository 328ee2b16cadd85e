import assert from "node:assert/strict";
import { randomBytes, scryptSync } from "node:crypto";
import { test } from "node:test";
import { hashPassword, passwordProblem, verifyPassword } from "./password.ts";

test("hashes are scrypt$N$r$p$salt$hash with a fresh salt each time, never the password", async () => {
  const [a, b] = await Promise.all([hashPassword("correct horse"), hashPassword("correct horse")]);
  assert.match(a, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/]+=*\$[A-Za-z0-9+/]+=*$/);
  assert.notEqual(a, b, "a random salt per hash");
  assert.ok(!a.includes("correct horse"));
});

test("verify: the right password passes, anything else fails", async () => {
  const stored = await hashPassword("correct horse");
  assert.equal(await verifyPassword("correct horse", stored), true);
  assert.equal(await verifyPassword("correct hors", stored), false);
  assert.equal(await verifyPassword("Correct horse", stored), false);
  assert.equal(await verifyPassword("", stored), false);
});

test("an unknown user (no hash) or a malformed hash never verifies", async () => {
  assert.equal(await verifyPassword("anything at all", null), false);
  for (const bad of [
    "",
    "plain",
    "scrypt$3$8$1$c2FsdA==$aGFzaA==",
    "bcrypt$10$x$y$z$w",
    "scrypt$32768$8$1$$",
  ])
    assert.equal(await verifyPassword("anything at all", bad), false, bad);
});

test("the cost is read from the stored hash, so older or newer parameters still verify", async () => {
  const salt = randomBytes(16);
  const hash = scryptSync("legacy pass", salt, 32, { N: 1024, r: 4, p: 2 });
  const stored = `scrypt$1024$4$2$${salt.toString("base64")}$${hash.toString("base64")}`;
  assert.equal(await verifyPassword("legacy pass", stored), true);
  assert.equal(await verifyPassword("legacy pas", stored), false);
});

test("password rules: 8 to 1024 characters", () => {
  assert.match(passwordProblem("short") ?? "", /at least 8/);
  assert.equal(passwordProblem("12345678"), null);
  assert.match(passwordProblem("x".repeat(1025)) ?? "", /at most 1024/);
});
