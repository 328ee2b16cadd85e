// Issue #9, item 2: an upstream that counts more prompt tokens than the reservation's bound
// is charged what it reported (the record stays the truth), and the surprise is visible and
// corrects itself: the record carries what was reserved and the overrun, a counter counts
// overrun tokens by model, a warning names the model, and the model's overhead grows so the
// next reservation covers the same request.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

describe("an upstream that counts more than the prompt bound", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  before(async () => {
    // ceil(JSON of the messages / 4) + 3: for a short message far more than its bytes, so a
    // model configured without template overheads is sure to overrun
    upstream = await startMockUpstream({ promptCount: "template" });
    const base = testConfig(upstream);
    gw = await startTestGateway({
      upstream,
      config: {
        models: base.models.map((m) =>
          m.id === TEST_MODEL ? { ...m, prompt_overhead: { per_request: 0, per_message: 0 } } : m,
        ),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const chat = (secret: string) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: TEST_MODEL,
        max_tokens: 5,
        messages: [{ role: "user", content: "hi" }],
      }),
    });

  it("charges what was reported, records the overrun, counts it, warns, and reserves enough next time", async () => {
    const account = await gw.account("overrun");
    const key = await gw.key(account);
    const first = await chat(key.secret);
    assert.equal(first.status, 200);
    const usage = ((await first.json()) as { usage: { prompt_tokens: number; total_tokens: number } }).usage;
    const row = await gw.record(first.headers.get("x-request-id")!);
    // "hi" is 2 bytes, the bound without overheads; the upstream counts ceil(32 / 4) + 3 = 11
    assert.equal(usage.prompt_tokens, 11);
    assert.equal(Number(row.reserved_tokens), 2 + 5);
    assert.equal(Number(row.total_tokens), usage.total_tokens, "charged what the upstream reported");
    assert.equal(Number(row.overrun_tokens), usage.total_tokens - Number(row.reserved_tokens));
    assert.ok(Number(row.overrun_tokens) > 0);
    const stored = await gw.gateway.deps.store.db
      .selectFrom("api_keys")
      .select("used_tokens")
      .where("id", "=", key.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(stored.used_tokens), usage.total_tokens, "the counter agrees with the record");

    const metrics = await (await fetch(`${gw.origin}/metrics`)).text();
    assert.match(
      metrics,
      new RegExp(`gateway_overrun_tokens_total\\{model="${TEST_MODEL}"\\} ${row.overrun_tokens}\\b`),
    );
    const warning = gw.logs.map((l) => JSON.parse(l)).find((l) => l.level === 40 && l.model === TEST_MODEL);
    assert.ok(warning, "a warning names the model");
    assert.match(warning.msg, new RegExp(`model ${TEST_MODEL}`));
    assert.equal(warning.overrun, Number(row.overrun_tokens));
    assert.equal(warning.per_request_overhead, usage.prompt_tokens - 2, "the overhead grew by the shortfall");

    const second = await chat(key.secret);
    assert.equal(second.status, 200);
    await second.arrayBuffer();
    const next = await gw.record(second.headers.get("x-request-id")!);
    assert.equal(Number(next.overrun_tokens), 0, "the same request is covered now");
    assert.equal(Number(next.reserved_tokens), usage.prompt_tokens + 5);
    assert.equal(Number(next.total_tokens), usage.total_tokens);
  });
});
