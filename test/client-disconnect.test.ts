// A client that hangs up: the upstream call is aborted, the reservation is closed, and the
// record says client_disconnect with the prompt plus what was delivered.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parseChatRequest } from "../src/domain/chat-request.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../src/providers/prompt-bound.ts";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { until } from "./support/stream-assertions.ts";

describe("client disconnect", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let secret: string;
  let keyId: string;
  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({ upstream });
    const account = await gw.account("leaver");
    ({ secret, id: keyId } = await gw.key(account));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  for (const stream of [true, false]) {
    it(`mid-${stream ? "stream" : "answer"}: upstream aborted, partial charge, record client_disconnect`, async () => {
      upstream.reset();
      const controller = new AbortController();
      const content = stream ? "tell me mock:hang-after=3" : "tell me mock:hang";
      const res = fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: TEST_MODEL,
          stream,
          max_tokens: 100,
          messages: [{ role: "user", content }],
        }),
        signal: controller.signal,
      });
      let requestId: string;
      if (stream) {
        const response = await res;
        requestId = response.headers.get("x-request-id")!;
        const reader = response.body!.getReader();
        const first = await reader.read(); // some content arrived
        assert.ok(first.value && first.value.length > 0);
      } else {
        await until(() => upstream.inFlight() === 1, "the call reaches the upstream");
      }
      controller.abort();
      await res.catch(() => undefined);
      await until(() => upstream.aborted() === 1, "the gateway aborts the upstream call");
      assert.equal(upstream.inFlight(), 0);
      await until(() => gw.gateway.deps.ledger.openReservations() === 0, "the reservation is closed");
      const rows = await gw.gateway.deps.store.db
        .selectFrom("call_records")
        .selectAll()
        .where("status", "=", "client_disconnect")
        .where("stream", "=", stream ? 1 : 0)
        .execute();
      assert.equal(rows.length, 1);
      const row = rows[0]!;
      if (stream) assert.equal((await gw.record(requestId!)).request_id, row.request_id);
      assert.equal(row.http_status, 499);
      assert.ok(row.prompt_tokens > 0, "the prompt is charged");
      if (stream) assert.ok(row.completion_tokens >= 1, "the delivered tokens are charged");
      else assert.equal(row.completion_tokens, 0, "nothing was delivered");
      assert.ok(row.total_tokens < row.prompt_tokens + 100, "never the whole reservation");
      const key = await gw.gateway.deps.store.db
        .selectFrom("api_keys")
        .select("used_tokens")
        .where("id", "=", keyId)
        .executeTakeFirstOrThrow();
      const all = await gw.gateway.deps.store.db
        .selectFrom("call_records")
        .select((eb) => eb.fn.sum<number>("total_tokens").as("t"))
        .where("key_id", "=", keyId)
        .executeTakeFirstOrThrow();
      assert.equal(Number(all.t), key.used_tokens, "records add up to the key's counter");
    });
  }

  // The local count of what was delivered can run far past what the upstream could have
  // produced (long words): the reservation is what the call may cost (the outside audit, #17).
  it("a client disconnect is never charged more than was reserved, whatever the local estimate says", async () => {
    upstream.reset();
    const account = await gw.account("disconnect-cap");
    const key = await gw.key(account);
    // each streamed word is 2,000 characters: the local count of what was delivered is far
    // more than the 10 tokens the upstream may produce
    const messages = [{ role: "user" as const, content: `mock:text=${"x".repeat(2_000)} mock:hang-after=5` }];
    const controller = new AbortController();
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: TEST_MODEL, stream: true, max_tokens: 10, messages }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let seen = "";
    while ((seen.match(/"content"/g) ?? []).length < 5)
      seen += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await until(() => gw.gateway.deps.ledger.openReservations() === 0, "the reservation is closed");
    await gw.gateway.deps.records.flush();
    const row = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(row.status, "client_disconnect");
    const reserved =
      promptUpperBound(parseChatRequest({ model: TEST_MODEL, messages }), DEFAULT_PROMPT_OVERHEADS) + 10;
    assert.ok(row.total_tokens <= reserved, `charged ${row.total_tokens}, reserved ${reserved}`);
    assert.ok(row.completion_tokens > 0, "what was delivered is still charged");
  });
});
