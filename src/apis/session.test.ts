import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sessionOf } from "./session.ts";

const claudeUserId = (session: unknown) =>
  JSON.stringify({ device_id: "d".repeat(64), account_uuid: "", session_id: session });

describe("the session a call names", () => {
  test("none without any of the names", () => {
    assert.equal(sessionOf({}), null);
    assert.equal(sessionOf({ "x-request-id": "abc" }, { metadataUserId: "user-1" }), null);
  });

  test("x-session-id first, then Claude Code's, then Codex's", () => {
    const all = {
      "x-session-id": "mine",
      "x-claude-code-session-id": "claude-1",
      "session-id": "thread-1",
      originator: "codex_exec",
    };
    assert.deepEqual(sessionOf(all), { id: "mine", client: "header" });
    const { "x-session-id": _, ...agents } = all;
    assert.deepEqual(sessionOf(agents), { id: "claude-1", client: "claude-code" });
    const { "x-claude-code-session-id": __, ...codex } = agents;
    assert.deepEqual(sessionOf(codex), { id: "thread-1", client: "codex" });
  });

  test("Claude Code's metadata.user_id, when its header is missing", () => {
    assert.deepEqual(
      sessionOf({}, { metadataUserId: claudeUserId("80515748-8dfe-4b01-9c87-cbc880dbb57c") }),
      {
        id: "80515748-8dfe-4b01-9c87-cbc880dbb57c",
        client: "claude-code",
      },
    );
    for (const bad of [
      claudeUserId(42),
      claudeUserId("a b"),
      "{not json",
      `{"session_id":"${"x".repeat(2000)}"}`,
      7,
    ])
      assert.equal(sessionOf({}, { metadataUserId: bad }), null, String(bad).slice(0, 40));
  });

  test("prompt_cache_key is a session only when Codex sends it", () => {
    assert.deepEqual(sessionOf({ originator: "codex_cli_rs" }, { promptCacheKey: "thread-2" }), {
      id: "thread-2",
      client: "codex",
    });
    assert.equal(sessionOf({}, { promptCacheKey: "thread-2" }), null);
    assert.equal(sessionOf({ originator: "my-app" }, { promptCacheKey: "thread-2" }), null);
  });

  test("a malformed id is passed over for the next", () => {
    for (const bad of ["", "x".repeat(129), "two words", "-dash-first", "a/b", "é", "a\u0000b"])
      assert.deepEqual(
        sessionOf({ "x-session-id": bad, "session-id": "thread-3" }),
        { id: "thread-3", client: "codex" },
        JSON.stringify(bad),
      );
    assert.deepEqual(sessionOf({ "x-session-id": "x".repeat(128) }), {
      id: "x".repeat(128),
      client: "header",
    });
    assert.deepEqual(sessionOf({ "x-session-id": "  run.1:a_b-c  " }), {
      id: "run.1:a_b-c",
      client: "header",
    });
    // a header sent twice arrives as an array: not one id
    assert.equal(sessionOf({ "x-session-id": ["a", "b"] as unknown as string }), null);
  });
});
