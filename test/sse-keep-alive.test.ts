// While a stream waits for its first token the gateway sends SSE comments
// (server.sse_keepalive_ms), so that proxies and clients that drop an idle connection keep it;
// the stream still ends with [DONE], and the openai SDK reads it as any other.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { parseStream } from "./support/stream-assertions.ts";

describe("SSE keep-alive comments", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let secret: string;

  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({
      upstream,
      config: { server: { ...testConfig(upstream).server, sse_keepalive_ms: 150 } },
    });
    secret = (await gw.key(await gw.account("keep-alive"))).secret;
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const sdk = () => new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });

  const post = (body: unknown) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("a stream waiting for its first token sends keep-alive comments, and still ends with [DONE]", async () => {
    const res = await post({
      model: TEST_MODEL,
      stream: true,
      messages: [{ role: "user", content: "slow mock:latency=600 mock:tokens=3" }],
    });
    const text = await res.text();
    assert.equal(res.status, 200);
    const firstData = text.indexOf("data:");
    assert.ok(
      text.indexOf(": keep-alive") !== -1 && text.indexOf(": keep-alive") < firstData,
      text.slice(0, 200),
    );
    const s = parseStream(text);
    assert.equal(s.contents.length, 3);
    assert.ok(s.done);
    // and the SDK reads such a stream as usual
    const chunks: string[] = [];
    const stream = await sdk().chat.completions.create({
      model: TEST_MODEL,
      stream: true,
      messages: [{ role: "user", content: "slow mock:latency=400 mock:tokens=2" }],
    });
    for await (const chunk of stream) chunks.push(chunk.choices[0]?.delta?.content ?? "");
    assert.equal(chunks.join("").trim().split(/\s+/).length, 2);
  });
});
