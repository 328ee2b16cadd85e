// Agent sessions as records (issue #31): the session each client names, as the records, the
// console and the exports show it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { loadAgentFixture } from "./agents/fixtures.ts";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

/** Sends a recorded request as its client did, with the test's key and model. */
async function replay(
  gw: TestGateway,
  client: "claude-code" | "codex",
  name: string,
  secret: string,
  change: (headers: Record<string, string>, body: Record<string, unknown>) => void = () => {},
): Promise<{ status: number; requestId: string }> {
  const fixture = loadAgentFixture(client, name);
  const headers = { ...fixture.headers, authorization: `Bearer ${secret}` };
  const body = { ...fixture.body, model: TEST_MODEL } as Record<string, unknown>;
  change(headers, body);
  const res = await fetch(`${gw.origin}${fixture.path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return { status: res.status, requestId: res.headers.get("x-request-id")! };
}

describe("the session a call belongs to", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let secret: string;
  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({ upstream });
    secret = (await gw.key(await gw.account("sessions"))).secret;
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  test("Claude Code's recorded requests carry its session id", async () => {
    for (const name of ["default-json.turn-1", "named-stream-json.turn-2"]) {
      const fixture = loadAgentFixture("claude-code", name);
      const { status, requestId } = await replay(gw, "claude-code", name, secret);
      assert.equal(status, 200, name);
      const record = await gw.record(requestId);
      assert.equal(record.session_id, fixture.headers["x-claude-code-session-id"]);
      assert.equal(record.session_client, "claude-code");
      assert.equal(record.api, "messages");
    }
  });

  test("without its header, Claude Code's session is read from metadata.user_id", async () => {
    const fixture = loadAgentFixture("claude-code", "default-json.turn-1");
    const { requestId } = await replay(gw, "claude-code", "default-json.turn-1", secret, (h) => {
      delete h["x-claude-code-session-id"];
    });
    const record = await gw.record(requestId);
    assert.equal(record.session_id, JSON.parse(fixture.body.metadata.user_id).session_id);
    assert.equal(record.session_client, "claude-code");
  });

  test("Codex's recorded requests carry its thread", async () => {
    for (const name of ["default-text.turn-1", "named-json.turn-2"]) {
      const fixture = loadAgentFixture("codex", name);
      const { status, requestId } = await replay(gw, "codex", name, secret);
      assert.equal(status, 200, name);
      const record = await gw.record(requestId);
      assert.equal(record.session_id, fixture.headers["session-id"]);
      assert.equal(record.session_id, fixture.body.prompt_cache_key);
      assert.equal(record.session_client, "codex");
      assert.equal(record.api, "responses");
    }
  });

  test("without its header, Codex's thread is its prompt_cache_key; another client's cache key is none", async () => {
    const fixture = loadAgentFixture("codex", "default-text.turn-1");
    const codex = await replay(gw, "codex", "default-text.turn-1", secret, (h) => {
      delete h["session-id"];
    });
    assert.equal((await gw.record(codex.requestId)).session_id, fixture.body.prompt_cache_key);
    const other = await replay(gw, "codex", "default-text.turn-1", secret, (h) => {
      delete h["session-id"];
      delete h.originator;
    });
    assert.equal((await gw.record(other.requestId)).session_id, null);
  });

  test("x-session-id through the OpenAI SDK, on any API, before what an agent names", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
    const { response, data } = await client.chat.completions
      .create(
        { model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] },
        { headers: { "x-session-id": "nightly-run-42" } },
      )
      .withResponse();
    assert.ok(data.choices[0]);
    const record = await gw.record(response.headers.get("x-request-id")!);
    assert.equal(record.session_id, "nightly-run-42");
    assert.equal(record.session_client, "header");
    assert.equal(record.api, "chat.completions");

    const codex = await replay(gw, "codex", "default-text.turn-1", secret, (h) => {
      h["x-session-id"] = "my-own";
    });
    assert.equal((await gw.record(codex.requestId)).session_id, "my-own");
  });

  test("a malformed session id is passed over, and the call goes on", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
    for (const bad of ["x".repeat(129), "two words", "-leading", "a/b"]) {
      const { response } = await client.chat.completions
        .create(
          { model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] },
          { headers: { "x-session-id": bad } },
        )
        .withResponse();
      assert.equal((await gw.record(response.headers.get("x-request-id")!)).session_id, null, bad);
    }
    // the next source still counts
    const fixture = loadAgentFixture("claude-code", "default-json.turn-1");
    const { requestId } = await replay(gw, "claude-code", "default-json.turn-1", secret, (h) => {
      h["x-session-id"] = "bad id";
    });
    assert.equal((await gw.record(requestId)).session_id, fixture.headers["x-claude-code-session-id"]);
  });

  test("a call refused before its body is read still carries the headers' session", async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${secret}`,
        "content-type": "application/json",
        "x-session-id": "s-1",
      },
      body: "{not json",
    });
    assert.equal(res.status, 400);
    const record = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(record.session_id, "s-1");
  });
});
