import assert from "node:assert/strict";
import { test } from "node:test";
import { LOGIN_LIMITS, LoginLimiter } from "./login-limiter.ts";

const WINDOW = LOGIN_LIMITS.windowMs;

test("5 failures for one e-mail block it until the oldest leaves the 15-minute window", () => {
  const limiter = new LoginLimiter();
  const t0 = 1_000_000;
  for (let i = 0; i < 5; i++)
    assert.equal(limiter.attempt("a@x", "10.0.0.1", t0 + i * 1000).retryAfterMs, 0, `attempt ${i + 1}`);
  assert.equal(limiter.attempt("a@x", "10.0.0.1", t0 + 5000).retryAfterMs, WINDOW - 5000);
  // the same e-mail from another address is blocked too; another e-mail is not
  assert.ok(limiter.attempt("a@x", "10.0.0.2", t0 + 5000).retryAfterMs > 0);
  assert.equal(limiter.attempt("b@x", "10.0.0.1", t0 + 5000).retryAfterMs, 0);
  // once the first failure is older than the window, one more attempt is allowed
  assert.equal(limiter.attempt("a@x", "10.0.0.1", t0 + WINDOW).retryAfterMs, 0);
});

test("an attempt is counted when it is admitted, before its outcome is known", () => {
  const limiter = new LoginLimiter();
  // as concurrent logins do: every attempt is admitted or refused before any password check ends
  const admitted = Array.from({ length: 40 }, () => limiter.attempt("a@x", "10.0.0.1", 5000)).filter(
    (a) => a.retryAfterMs === 0,
  );
  assert.equal(admitted.length, LOGIN_LIMITS.perEmail);
});

test("a refused attempt does not count", () => {
  const limiter = new LoginLimiter({ perEmail: 2, perAddress: 3, windowMs: WINDOW });
  limiter.attempt("a@x", "ip", 1);
  limiter.attempt("a@x", "ip", 2);
  for (let i = 0; i < 10; i++) assert.ok(limiter.attempt("a@x", "ip", 3).retryAfterMs > 0);
  assert.equal(limiter.attempt("b@x", "ip", 4).retryAfterMs, 0, "the address counts 2 of its 3");
});

test("20 failures from one address block every e-mail from it", () => {
  const limiter = new LoginLimiter();
  for (let i = 0; i < 20; i++) limiter.attempt(`user${i}@x`, "10.0.0.9", 5000 + i);
  assert.ok(limiter.attempt("new@x", "10.0.0.9", 6000).retryAfterMs > 0);
  assert.equal(limiter.attempt("new@x", "10.0.0.8", 6000).retryAfterMs, 0);
});

test("a successful login clears the e-mail's failures and its own count, not the address's others", () => {
  const limiter = new LoginLimiter({ perEmail: 2, perAddress: 3, windowMs: WINDOW });
  limiter.attempt("a@x", "ip", 1);
  const ok = limiter.attempt("a@x", "ip", 2);
  assert.ok(limiter.attempt("a@x", "other", 3).retryAfterMs > 0);
  limiter.succeed("a@x", "ip", ok.at);
  assert.equal(limiter.attempt("a@x", "other", 3).retryAfterMs, 0);
  limiter.attempt("b@x", "ip", 4);
  limiter.attempt("b@x", "ip", 5);
  assert.ok(limiter.attempt("c@x", "ip", 6).retryAfterMs > 0, "the address still counts its 3 failures");
});
