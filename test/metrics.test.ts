// What an operator's Prometheus gets, end to end: a real gateway in front of
// the mock upstream, the official openai SDK as the client. /metrics carries Node's process
// and runtime series, the build, refusals by the catalog's code, upstream latency by provider
// and model, and no label a client can fill or that grows with the accounts.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import { VERSION } from "../src/observability/metrics.ts";
import { pricedModels, startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

/** Awaits a call that must fail and returns the SDK's error. */
async function refused(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof APIError, `expected an APIError, got ${String(err)}`);
    return err;
  }
  assert.fail("the call succeeded; it should have been refused");
}

describe("metrics", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let accountId: string;
  let secret: string;
  let client: OpenAI;

  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({
      upstream,
      config: { models: pricedModels(upstream) },
      env: { GATEWAY_COMMIT: "0123abc" },
    });
    accountId = await gw.account("observed");
    secret = (await gw.key(accountId)).secret;
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const scrape = async () => (await fetch(`${gw.origin}/metrics`)).text();

  /** The value of one sample, or undefined when there is none. */
  function sample(text: string, name: string, labels: string): number | undefined {
    const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
  }

  test("Node's process and runtime series, and the build", async () => {
    const text = await scrape();
    for (const name of [
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "process_start_time_seconds",
      "nodejs_heap_size_used_bytes",
      "nodejs_eventloop_lag_seconds",
      "nodejs_gc_duration_seconds_count",
    ])
      assert.match(text, new RegExp(`^${name}(\\{[^}]*\\})? `, "m"), name);
    assert.equal(
      sample(
        text,
        "gateway_build_info",
        `version="${VERSION}",node_version="${process.version}",commit="0123abc"`,
      ),
      1,
    );
  });

  test("refusals by the catalog's code, type and the status answered; no label from what the client sent", async () => {
    const before = await scrape();
    const count = (text: string, labels: string) => sample(text, "gateway_refusals_total", labels) ?? 0;

    const stranger = new OpenAI({ baseURL: gw.baseURL, apiKey: `sk-${"x".repeat(43)}`, maxRetries: 0 });
    const unknownKey = await refused(
      stranger.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }),
    );
    assert.equal(unknownKey.status, 401);
    const unknownModel = await refused(
      client.chat.completions.create({
        model: "no-such-model-7d1f",
        messages: [{ role: "user", content: "hi" }],
      }),
    );
    assert.equal(unknownModel.status, 404);
    // the upstream's own code reaches the client; the counter keeps the catalog's
    const overflow = await refused(
      client.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "far too long mock:context-overflow" }],
      }),
    );
    assert.equal(overflow.status, 400);
    assert.equal(overflow.code, "context_length_exceeded");
    const unknownRoute = await fetch(`${gw.baseURL}/no/such/route-5e2a`);
    assert.equal(unknownRoute.status, 404);
    await unknownRoute.text();

    const text = await scrape();
    for (const [labels, what] of [
      ['code="invalid_api_key",type="authentication_error",status="401"', "an unknown key"],
      ['code="model_not_found",type="invalid_request_error",status="404"', "an unknown model"],
      ['code="upstream_bad_request",type="invalid_request_error",status="400"', "the upstream's refusal"],
      ['code="http_error",type="dev_gateway_error",status="404"', "an unknown route"],
    ])
      assert.equal(count(text, labels!) - count(before, labels!), 1, what);
    assert.doesNotMatch(text, /no-such-model-7d1f|route-5e2a|context_length_exceeded/);
  });

  test("upstream time to the first byte and in all, by provider and public model", async () => {
    const before = await scrape();
    await client.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "one" }] });
    const stream = await client.chat.completions.create({
      model: TEST_MODEL,
      stream: true,
      messages: [{ role: "user", content: "two" }],
    });
    for await (const _ of stream);
    const text = await scrape();
    const moved = (name: string, labels: string) =>
      (sample(text, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
    const byModel = `provider="mock",model="${TEST_MODEL}"`;
    assert.equal(moved("gateway_upstream_first_byte_seconds_count", byModel), 2);
    assert.equal(moved("gateway_upstream_duration_seconds_count", `${byModel},outcome="ok"`), 2);
    assert.ok(sample(text, "gateway_upstream_first_byte_seconds_sum", byModel)! > 0);
  });

  test("no series by account unless metrics.account_label asks for one", async () => {
    await client.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "pay" }] });
    const text = await scrape();
    assert.ok(
      sample(text, "gateway_cost_usd_total", `model="${TEST_MODEL}"`)! > 0,
      "the call cost something",
    );
    assert.doesNotMatch(text, /gateway_account_cost_usd_total/);
    assert.ok(!text.includes(accountId), "no account id in any label");
  });
});
