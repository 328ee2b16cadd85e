// OpenTelemetry traces, end to end: a real gateway with `tracing.enabled` exporting over
// OTLP/HTTP to a local receiver (test/support/otlp-receiver.ts), the official openai SDK as
// the client. A call is a server span; each upstream attempt a GenAI client span under it,
// with the attempt's outcome; the caller's traceparent is joined; the endpoint may come from
// the standard environment variables. With tracing off, no part of the SDK is even loaded.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import type { ConfigInput } from "../src/config/schema.ts";
import { VERSION } from "../src/observability/metrics.ts";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./support/otlp-receiver.ts";

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;
const FALLOVER = "fallover";

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

/** The test config, with a deployment that always fails (500) and a model that falls over from it. */
function config(upstream: MockUpstream, tracing: ConfigInput["tracing"]): Partial<ConfigInput> {
  const base = testConfig(upstream);
  return {
    tracing,
    providers: [
      ...base.providers,
      {
        id: "broken",
        type: "openai-compatible",
        base_url: upstream.url,
        api_key_env: "MOCK_UPSTREAM_KEY",
        // the mock reads its directives from this header too: every call to it fails
        headers: { "x-mock-directives": "mock:status=500" },
      },
    ],
    models: [
      ...base.models,
      {
        id: FALLOVER,
        routing: "ordered",
        deployments: [
          { provider: "broken", upstream_model: "mock-model" },
          { provider: "mock", upstream_model: "mock-model" },
        ],
      },
    ],
    plans: base.plans.map((p) =>
      p.id === "default" ? { ...p, models: [...(p.models ?? []), FALLOVER] } : p,
    ),
  };
}

describe("tracing on", () => {
  let upstream: MockUpstream;
  let receiver: OtlpReceiver;
  let gw: TestGateway;
  let client: OpenAI;
  let accountId: string;
  let secret: string;

  before(async () => {
    upstream = await startMockUpstream();
    receiver = await startOtlpReceiver();
    gw = await startTestGateway({
      upstream,
      config: config(upstream, { enabled: true, endpoint: receiver.url, account_id: true }),
    });
    accountId = await gw.account("traced");
    secret = (await gw.key(accountId)).secret;
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await receiver?.close();
  });

  /** The server span of a request and its client spans in start order, once exported. */
  async function trace(requestId: string | null | undefined) {
    assert.ok(requestId, "the answer carries x-request-id");
    await gw.gateway.deps.tracing.flush();
    const calls = receiver.spans.filter((s) => s.attributes["gateway.request_id"] === requestId);
    assert.equal(calls.length, 1, "one span for the call");
    const call = calls[0]!;
    const attempts = receiver.spans.filter((s) => s.parentSpanId === call.spanId);
    for (const a of attempts) assert.equal(a.traceId, call.traceId, "the attempts are in the call's trace");
    return { call, attempts };
  }

  function assertAttempt(span: ReceivedSpan, provider: string): void {
    assert.equal(span.kind, CLIENT);
    assert.equal(span.name, "chat mock-model");
    assert.equal(span.attributes["gen_ai.operation.name"], "chat");
    assert.equal(span.attributes["gen_ai.provider.name"], "openai");
    assert.equal(span.attributes["gen_ai.system"], "openai");
    assert.equal(span.attributes["gen_ai.request.model"], "mock-model");
    assert.equal(span.attributes["gateway.provider.id"], provider);
    assert.equal(span.attributes["gateway.deployment"], `${provider}/mock-model`);
  }

  test("a call: a server span, and a client span for its attempt with the GenAI attributes", async () => {
    const { data, response } = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: "user", content: "trace me mock:tokens=4" }] })
      .withResponse();
    const { call, attempts } = await trace(response.headers.get("x-request-id"));

    assert.equal(call.kind, SERVER);
    assert.equal(call.name, "POST /v1/chat/completions");
    assert.equal(call.parentSpanId, "", "a trace of its own when the caller sent none");
    assert.equal(call.status, 0, "unset: the call went well");
    assert.deepEqual(
      {
        method: call.attributes["http.request.method"],
        route: call.attributes["http.route"],
        status: call.attributes["http.response.status_code"],
        api: call.attributes["gateway.api"],
        model: call.attributes["gateway.model"],
        account: call.attributes["gateway.account.id"],
        callStatus: call.attributes["gateway.call.status"],
        attempts: call.attributes["gateway.attempts"],
        prompt: call.attributes["gateway.usage.prompt_tokens"],
        completion: call.attributes["gateway.usage.completion_tokens"],
        error: call.attributes["error.type"],
      },
      {
        method: "POST",
        route: "/v1/chat/completions",
        status: 200,
        api: "chat.completions",
        model: TEST_MODEL,
        account: accountId,
        callStatus: "ok",
        attempts: 1,
        prompt: data.usage!.prompt_tokens,
        completion: 4,
        error: undefined,
      },
    );
    assert.equal(call.resource["service.name"], "chat-gateway");
    assert.equal(call.resource["service.version"], VERSION);

    assert.equal(attempts.length, 1);
    const attempt = attempts[0]!;
    assertAttempt(attempt, "mock");
    assert.equal(attempt.status, 0);
    assert.equal(attempt.attributes["gen_ai.request.stream"], false);
    assert.equal(attempt.attributes["gen_ai.response.model"], "mock-model");
    assert.equal(attempt.attributes["gen_ai.usage.input_tokens"], data.usage!.prompt_tokens);
    assert.equal(attempt.attributes["gen_ai.usage.output_tokens"], 4);
    assert.deepEqual(attempt.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    assert.equal(attempt.attributes["error.type"], undefined);
    // nothing of the conversation or the keys travels with the spans
    const exported = JSON.stringify(receiver.spans);
    assert.ok(!exported.includes("trace me"), "no prompt text");
    assert.ok(!exported.includes(secret) && !exported.includes("sk-upstream-secret"), "no key");
  });

  test("a stream: its attempt's time to the first chunk, finish reasons and usage", async () => {
    const { data: stream, response } = await client.chat.completions
      .create({
        model: TEST_MODEL,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "stream me mock:tokens=3" }],
      })
      .withResponse();
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    const { call, attempts } = await trace(response.headers.get("x-request-id"));
    assert.equal(call.attributes["gateway.usage.completion_tokens"], 3);
    assert.equal(attempts.length, 1);
    const attempt = attempts[0]!;
    assertAttempt(attempt, "mock");
    assert.equal(attempt.attributes["gen_ai.request.stream"], true);
    const ttfc = attempt.attributes["gen_ai.response.time_to_first_chunk"];
    assert.ok(typeof ttfc === "number" && ttfc >= 0, `time to first chunk: ${ttfc}`);
    assert.deepEqual(attempt.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    assert.equal(attempt.attributes["gen_ai.usage.input_tokens"], usage!.prompt_tokens);
    assert.equal(attempt.attributes["gen_ai.usage.output_tokens"], 3);
  });

  test("a failover: the failed attempt's span says why, the next one answered", async () => {
    const { response } = await client.chat.completions
      .create({ model: FALLOVER, messages: [{ role: "user", content: "fall over" }] })
      .withResponse();
    const { call, attempts } = await trace(response.headers.get("x-request-id"));
    assert.equal(call.attributes["gateway.attempts"], 2);
    assert.equal(call.attributes["gateway.model"], FALLOVER);
    assert.equal(call.status, 0);
    assert.equal(attempts.length, 2);
    const [failed, answered] = attempts as [ReceivedSpan, ReceivedSpan];
    assertAttempt(failed, "broken");
    assert.equal(failed.attributes["error.type"], "server_error");
    assert.equal(failed.attributes["http.response.status_code"], 500);
    assert.equal(failed.status, ERROR);
    assertAttempt(answered, "mock");
    assert.equal(answered.attributes["error.type"], undefined);
    assert.equal(answered.status, 0);
  });

  test("a call the upstream fails: the call span is an error with the code the client got", async () => {
    const err = await refused(
      client.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "mock:status=503" }],
      }),
    );
    assert.equal(err.status, 502);
    const { call, attempts } = await trace(err.headers?.get("x-request-id"));
    assert.equal(call.status, ERROR);
    assert.equal(call.attributes["http.response.status_code"], 502);
    assert.equal(call.attributes["error.type"], "upstream_error");
    assert.equal(call.attributes["gateway.call.status"], "error");
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.attributes["error.type"], "server_error");
    assert.equal(attempts[0]!.attributes["http.response.status_code"], 503);
  });

  test("a refused call: a span with the refusal's code, no attempt, not an error of the server", async () => {
    const stranger = new OpenAI({ baseURL: gw.baseURL, apiKey: `sk-${"x".repeat(43)}`, maxRetries: 0 });
    const err = await refused(
      stranger.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] }),
    );
    assert.equal(err.status, 401);
    const { call, attempts } = await trace(err.headers?.get("x-request-id"));
    assert.equal(call.attributes["http.response.status_code"], 401);
    assert.equal(call.attributes["error.type"], "invalid_api_key");
    assert.equal(call.attributes["gateway.account.id"], undefined, "no account behind an unknown key");
    assert.equal(call.status, 0, "a refusal is the client's, not the server's failure");
    assert.deepEqual(attempts, []);
  });

  test("a caller's traceparent: the call joins the caller's trace, under the caller's span", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parent = "00f067aa0ba902b7";
    const { response } = await client.chat.completions
      .create(
        { model: TEST_MODEL, messages: [{ role: "user", content: "joined" }] },
        { headers: { traceparent: `00-${traceId}-${parent}-01` } },
      )
      .withResponse();
    const { call, attempts } = await trace(response.headers.get("x-request-id"));
    assert.equal(call.traceId, traceId);
    assert.equal(call.parentSpanId, parent);
    assert.equal(attempts[0]!.traceId, traceId);
  });
});

describe("tracing endpoint from the environment", () => {
  let upstream: MockUpstream;
  let receiver: OtlpReceiver;

  before(async () => {
    upstream = await startMockUpstream();
    receiver = await startOtlpReceiver();
  });
  after(async () => {
    await upstream?.close();
    await receiver?.close();
  });

  test("OTEL_EXPORTER_OTLP_ENDPOINT, with /v1/traces added, over the file's endpoint; the spans left are sent on close", async () => {
    const elsewhere = await startOtlpReceiver();
    const gw = await startTestGateway({
      upstream,
      config: { tracing: { enabled: true, endpoint: elsewhere.url } },
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin },
    });
    try {
      const key = await gw.key(await gw.account("env-traced"));
      const client = new OpenAI({ baseURL: gw.baseURL, apiKey: key.secret, maxRetries: 0 });
      await client.chat.completions.create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "hi" }],
      });
    } finally {
      await gw.close();
      await elsewhere.close();
    }
    assert.deepEqual(
      receiver.spans.map((s) => s.kind),
      [CLIENT, SERVER],
      "the attempt and the call, exported when the gateway closed",
    );
    assert.equal(receiver.spans[1]!.attributes["gateway.account.id"], undefined, "tracing.account_id is off");
    assert.deepEqual(elsewhere.spans, []);
  });

  test("a variable that is not a URL stops the start with a configuration error", async () => {
    await assert.rejects(
      startTestGateway({
        upstream,
        config: { tracing: { enabled: true } },
        env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" },
      }),
      { name: "ConfigError", message: /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http/ },
    );
  });
});

/**
 * A gateway with tracing off in a process of its own, every module it resolves noted: it
 * serves a call, closes, and says which OpenTelemetry modules beyond the API it loaded.
 */
const TRACING_OFF = `
import { registerHooks } from "node:module";
const loaded = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    loaded.add(result.url);
    return result;
  },
});
const { startTestGateway } = await import("./test/support/gateway.ts");
const gw = await startTestGateway({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: process.env.RECEIVER } });
const key = await gw.key(await gw.account("untraced"));
const res = await fetch(gw.baseURL + "/chat/completions", {
  method: "POST",
  headers: { authorization: "Bearer " + key.secret, "content-type": "application/json" },
  body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hi" }] }),
});
await res.text();
await gw.close();
// the API alone is prom-client's (its process metrics read it), a facade that does nothing
const otel = [...loaded].filter((url) => url.includes("@opentelemetry/") && !url.includes("@opentelemetry/api/"));
console.log(JSON.stringify({ status: res.status, gateway: [...loaded].some((u) => u.endsWith("/src/server.ts")), otel }));
`;

describe("tracing off", () => {
  test("the OpenTelemetry SDK is not loaded, and nothing is exported", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const child = spawn(process.execPath, ["--input-type=module", "-e", TRACING_OFF], {
        cwd: new URL("..", import.meta.url),
        env: { ...process.env, RECEIVER: receiver.origin },
        stdio: ["ignore", "pipe", "inherit"],
      });
      let out = "";
      child.stdout.on("data", (d) => {
        out += d;
      });
      const code = await new Promise((resolve) => child.once("exit", resolve));
      assert.equal(code, 0, out);
      const result = JSON.parse(out.trim().split("\n").at(-1)!) as {
        status: number;
        gateway: boolean;
        otel: string[];
      };
      assert.equal(result.status, 200);
      assert.ok(result.gateway, "the hook saw the gateway's modules");
      assert.deepEqual(result.otel, []);
      assert.deepEqual(receiver.spans, []);
    } finally {
      await receiver.close();
    }
  });
});
