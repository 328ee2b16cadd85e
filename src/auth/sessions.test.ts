import assert from "node:assert/strict";
import { test } from "node:test";
import { readCookie, sessionCookie } from "./sessions.ts";

test("the session cookie: HttpOnly, SameSite=Strict, Path=/, Secure only over TLS; clearing sets Max-Age=0", () => {
  const plain = sessionCookie("abc", false).split("; ");
  assert.deepEqual(plain, ["gw_session=abc", "Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=604800"]);
  assert.deepEqual(sessionCookie("abc", true).split("; ").at(-1), "Secure");
  assert.equal(
    sessionCookie(null, true),
    "gw_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure",
  );
});

test("readCookie finds one cookie among several, or nothing", () => {
  assert.equal(readCookie("a=1; gw_session=xyz; b=2", "gw_session"), "xyz");
  assert.equal(readCookie("gw_session_old=1;gw_session=v", "gw_session"), "v");
  assert.equal(readCookie("a=1", "gw_session"), undefined);
  assert.equal(readCookie(undefined, "gw_session"), undefined);
  assert.equal(readCookie("junk; =x", "gw_session"), undefined);
});
