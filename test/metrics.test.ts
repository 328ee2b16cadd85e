// What an operator's Prometheus and log collector get, end to end: a real gateway in front of
// the mock upstream, the official openai SDK as the client. /metrics carries Node's process
// and runtime series, the build, refusals by the catalog's code, upstream latency by provider
// and model, and no label a client can fill or that grows with the accounts; each relayed
// call's log line carries its API, model, provider, usage, cost and outcome, and no secret.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import { VERSION } from "../src/observability/metrics.ts";
import { pricedModels, startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const UPSTREAM_KEY = "sk-upstream-secret-123";

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

describe("metrics and the request log line", () => {
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

  /** The request's log line. */
  function logLine(requestId: string | null | undefined): Record<string, unknown> {
    assert.ok(requestId);
    const lines = gw.logs
      .flatMap((chunk) => chunk.split("\n"))
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === "request" && l.request_id === requestId);
    assert.equal(lines.length, 1, `one line for ${requestId}`);
    return lines[0]!;
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

  test("a relayed call's line: API, model, provider, status, tokens, cost, latency and outcome", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: "user", content: "log me mock:tokens=5" }] })
      .withResponse();
    const requestId = response.headers.get("x-request-id");
    const record = await gw.record(requestId!);
    const line = logLine(requestId);
    assert.deepEqual(
      {
        route: line.route,
        status: line.status,
        account: line.account,
        api: line.api,
        model: line.model,
        provider: line.provider,
        upstream_model: line.upstream_model,
        attempts: line.attempts,
        prompt_tokens: line.prompt_tokens,
        completion_tokens: line.completion_tokens,
        cost_usd: line.cost_usd,
        call_status: line.call_status,
        error_code: line.error_code,
        ttft_ms: line.ttft_ms,
      },
      {
        route: "/v1/chat/completions",
        status: 200,
        account: accountId,
        api: "chat.completions",
        model: TEST_MODEL,
        provider: "mock",
        upstream_model: "mock-model",
        attempts: 1,
        prompt_tokens: data.usage!.prompt_tokens,
        completion_tokens: 5,
        cost_usd: Number(record.cost_nanos) / 1e9,
        call_status: "ok",
        error_code: null,
        ttft_ms: record.ttft_ms,
      },
    );
    assert.ok((line.cost_usd as number) > 0);
    assert.equal(typeof line.ms, "number");

    const { data: stream, response: streamed } = await client.chat.completions
      .create({
        model: TEST_MODEL,
        stream: true,
        messages: [{ role: "user", content: "stream mock:tokens=2" }],
      })
      .withResponse();
    for await (const _ of stream);
    const streamLine = logLine(streamed.headers.get("x-request-id"));
    assert.equal(streamLine.completion_tokens, 2);
    assert.equal(typeof streamLine.ttft_ms, "number", "a stream's time to its first token");
  });

  test("a failed call's line says how it ended; other requests keep their own fields", async () => {
    const failed = await refused(
      client.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "mock:status=500" }],
      }),
    );
    const line = logLine(failed.headers?.get("x-request-id"));
    assert.equal(line.status, 502);
    assert.equal(line.call_status, "error");
    assert.equal(line.error_code, "upstream_error");
    assert.equal(line.provider, "mock");

    // refused before the relay: the request's fields alone
    const stranger = new OpenAI({ baseURL: gw.baseURL, apiKey: `sk-${"y".repeat(43)}`, maxRetries: 0 });
    const unknown = await refused(
      stranger.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }),
    );
    const refusedLine = logLine(unknown.headers?.get("x-request-id"));
    assert.equal(refusedLine.status, 401);
    assert.equal(refusedLine.model, undefined);
    assert.equal(refusedLine.api, undefined);

    const models = await client.models.list().withResponse();
    const listLine = logLine(models.response.headers.get("x-request-id"));
    assert.deepEqual(
      Object.keys(listLine)
        .filter((k) => !["level", "time", "pid", "hostname", "service", "msg"].includes(k))
        .sort(),
      ["account", "key", "method", "ms", "request_id", "route", "status"],
    );

    const logs = gw.logs.join("");
    assert.ok(!logs.includes(secret), "no client key in the logs");
    assert.ok(!logs.includes(UPSTREAM_KEY), "no upstream key in the logs");
  });
});
