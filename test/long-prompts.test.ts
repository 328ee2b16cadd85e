// A prompt of a megabyte is counted in time linear in its length: while one is counted (by the
// demo model, or as the estimate for an upstream that reports no usage) the gateway goes on
// answering other clients. The outside audit (issue #17) found counts that took minutes.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

describe("one request cannot stall the gateway", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let secret: string;

  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({
      upstream,
      // room for a megabyte of prompt
      config: { server: { ...testConfig(upstream).server, body_limit_bytes: 4 * 1024 * 1024 } },
    });
    secret = (await gw.key(await gw.account("long-prompts"))).secret;
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const post = (body: unknown) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  for (const [name, model, content] of [
    ["a 1 MB single-word prompt to the demo model (counted locally)", "demo", "a".repeat(1_000_000)],
    [
      "a 1 MB run of CJK text to an upstream that reports no usage (estimated)",
      TEST_MODEL,
      `${"漢字".repeat(170_000)} mock:no-usage mock:tokens=3`,
    ],
  ] as const) {
    it(name, async () => {
      // Other clients keep being served while it runs: the longest wait between two
      // health checks stays far below what a quadratic count takes (minutes to hours).
      let longestGapMs = 0;
      let last = performance.now();
      let running = true;
      const probes = (async () => {
        while (running) {
          const res = await fetch(`${gw.origin}/healthz`);
          await res.arrayBuffer();
          const now = performance.now();
          longestGapMs = Math.max(longestGapMs, now - last);
          last = now;
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const res = await post({ model, messages: [{ role: "user", content }] });
      const body = (await res.json()) as { usage: { prompt_tokens: number } };
      running = false;
      await probes;
      assert.equal(res.status, 200);
      assert.ok(body.usage.prompt_tokens > 100_000, "the long prompt was counted, not skipped");
      assert.ok(longestGapMs < 3_000, `health checks waited ${Math.round(longestGapMs)} ms at most`);
    });
  }
});
