// The adapter against recorded upstream streams (./fixtures, sources in its README), served
// byte for byte from a local HTTP server, and against the failures an upstream can produce.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import { drain, finishReasons, textOf } from "../../../test/support/adapter-kit.ts";
import { listenForTests } from "../../../test/support/listen.ts";
import { FORWARDED_FIELDS, parseChatRequest } from "../../domain/chat-request.ts";
import type { Chunk } from "../../domain/completion.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import type { Provider, UpstreamCall } from "../types.ts";
import { openaiCompatibleConfig } from "./config.ts";
import { openaiCompatible } from "./index.ts";
import { wireBody } from "./request.ts";

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));

const API_KEY = "sk-test-upstream-key-0123456789";

// --- the upstream -------------------------------------------------------------------------

interface Received {
  /** the client's port: the same port is the same keep-alive connection */
  port: number | undefined;
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage["headers"];
  body: Record<string, unknown>;
}

type Answer = (res: ServerResponse) => void;

const received: Received[] = [];
let answer: Answer = (res) => res.writeHead(500).end();

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on("data", (p: Buffer) => parts.push(p));
  req.on("end", () => {
    received.push({
      port: req.socket.remotePort,
      method: req.method,
      url: req.url,
      headers: req.headers,
      body: JSON.parse(Buffer.concat(parts).toString("utf8")),
    });
    answer(res);
  });
});

const sse =
  (bytes: Buffer | string): Answer =>
  (res) =>
    res.writeHead(200, { "content-type": "text/event-stream" }).end(bytes);

/** A stream that sends its first event and stays open; `closed` resolves when the client hangs up. */
function openStream() {
  const first = fixture("openai-cut-before-done.sse").toString("utf8").split("\n\n")[0];
  let hungUp = () => {};
  const closed = new Promise<void>((resolve) => {
    hungUp = resolve;
  });
  const answer: Answer = (res) => {
    res.on("close", hungUp);
    res.writeHead(200, { "content-type": "text/event-stream" }).write(`${first}\n\n`);
  };
  return { answer, closed };
}

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Answer =>
  (res) =>
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));

let baseUrl = "";
const providers: Provider[] = [];

function provider(fields: Record<string, unknown> = {}): Provider {
  const config = openaiCompatibleConfig.parse({
    type: "openai-compatible",
    id: "recorded",
    base_url: baseUrl,
    api_key_env: "UPSTREAM_KEY",
    headers: { "openai-organization": "org-test" },
    ...fields,
  });
  const p = openaiCompatible.create(config, { UPSTREAM_KEY: API_KEY });
  providers.push(p);
  return p;
}

const request = (fields: Record<string, unknown> = {}) =>
  parseChatRequest({
    model: "public-model",
    messages: [{ role: "user", content: "how many angels can dance on the head of a pin\n" }],
    ...fields,
  });

const call = (fields: Record<string, unknown> = {}, signal = new AbortController().signal): UpstreamCall => ({
  request: request(fields),
  upstreamModel: "gpt-4.1",
  outputBound: 256,
  signal,
});

/** The streamed tool calls of choice 0, put together by their index. */
function toolCalls(chunks: Chunk[]) {
  const calls: { id?: string; name: string; arguments: string }[] = [];
  for (const c of chunks)
    for (const ch of c.choices)
      for (const t of (ch.delta.tool_calls ?? []) as {
        index: number;
        id?: string;
        function?: { name?: string; arguments?: string };
      }[]) {
        calls[t.index] ??= { name: "", arguments: "" };
        const acc = calls[t.index]!;
        if (t.id) acc.id = t.id;
        acc.name += t.function?.name ?? "";
        acc.arguments += t.function?.arguments ?? "";
      }
  return calls;
}

function assertUpstreamError(
  err: unknown,
  expected: { failure: string; status?: number; retryable: boolean; message?: string | RegExp },
): asserts err is UpstreamError {
  assert.ok(err instanceof UpstreamError, `expected an UpstreamError, got ${String(err)}`);
  assert.equal(err.failure, expected.failure);
  assert.equal(err.status, expected.status);
  assert.equal(err.retryable, expected.retryable);
  if (typeof expected.message === "string") assert.equal(err.message, expected.message);
  else if (expected.message) assert.match(err.message, expected.message);
}

before(async () => {
  baseUrl = await listenForTests(server, 0, "127.0.0.1");
});

beforeEach(() => {
  received.length = 0;
});

after(async () => {
  await Promise.all(providers.map((p) => p.close()));
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

// --- the request --------------------------------------------------------------------------

describe("wireBody", () => {
  const bounds = (body: Record<string, unknown>) => ({
    max_tokens: body.max_tokens,
    max_completion_tokens: body.max_completion_tokens,
  });

  test("exactly one output bound, the reserved one, under the name the client used", () => {
    const c = (fields: Record<string, unknown>) => ({ ...call(fields), outputBound: 77 });
    assert.deepEqual(bounds(wireBody(c({}), false)), { max_tokens: 77, max_completion_tokens: undefined });
    assert.deepEqual(bounds(wireBody(c({ max_tokens: 4000 }), false)), {
      max_tokens: 77,
      max_completion_tokens: undefined,
    });
    assert.deepEqual(bounds(wireBody(c({ max_completion_tokens: 4000 }), true)), {
      max_tokens: undefined,
      max_completion_tokens: 77,
    });
    const both = wireBody(c({ max_tokens: 9000, max_completion_tokens: 4000 }), false);
    assert.deepEqual(bounds(both), { max_tokens: undefined, max_completion_tokens: 77 });
    assert.equal("max_tokens" in both, false);
  });

  test("streams ask for usage, keeping the client's other stream options", () => {
    const body = wireBody(call({ stream: true, stream_options: { include_usage: false, extra: 1 } }), true);
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true, extra: 1 });
    assert.deepEqual(wireBody(call({ stream: true }), true).stream_options, { include_usage: true });
  });

  test("a whole completion carries neither stream nor stream_options", () => {
    const body = wireBody(call({ stream: true, stream_options: { include_usage: true } }), false);
    assert.equal("stream" in body, false);
    assert.equal("stream_options" in body, false);
  });

  test("the upstream's model name, the messages, the forwarded fields and nothing else", () => {
    const c = call({
      temperature: 0.2,
      user: "u-1",
      tools: [{ type: "function", function: { name: "f", parameters: {} } }],
      tool_choice: "auto",
      seed: 7,
      logit_bias: null,
      unknown_field: "dropped by validation",
    });
    const body = wireBody(c, true);
    const allowed = new Set<string>(["model", "messages", "stream", ...FORWARDED_FIELDS]);
    for (const key of Object.keys(body)) assert.ok(allowed.has(key), `unexpected field ${key}`);
    assert.equal(body.model, "gpt-4.1");
    assert.equal(body.messages, c.request.messages);
    assert.equal(body.temperature, 0.2);
    assert.equal(body.user, "u-1");
    assert.equal(body.tool_choice, "auto");
    assert.equal(body.seed, 7);
    assert.deepEqual(body.tools, [{ type: "function", function: { name: "f", parameters: {} } }]);
    assert.equal("logit_bias" in body, false, "a null field is not sent");
  });
});

describe("what the upstream receives", () => {
  test("one POST to base_url + /chat/completions with the key, the configured headers and wireBody", async () => {
    answer = sse(fixture("openai-tool-call-usage.sse"));
    const c = call({ stream: true, temperature: 0 });
    await drain(provider().stream(c));
    assert.equal(received.length, 1);
    const [r] = received;
    assert.equal(r?.method, "POST");
    assert.equal(r?.url, "/v1/chat/completions");
    assert.equal(r?.headers.authorization, `Bearer ${API_KEY}`);
    assert.equal(r?.headers["content-type"], "application/json");
    assert.equal(r?.headers["openai-organization"], "org-test");
    assert.deepEqual(r?.body, JSON.parse(JSON.stringify(wireBody(c, true))));
  });

  test("without api_key_env no authorization header is sent", async () => {
    answer = sse(fixture("openai-tool-call-usage.sse"));
    await drain(provider({ api_key_env: undefined }).stream(call()));
    assert.equal(received[0]?.headers.authorization, undefined);
  });
});

// --- recorded streams ---------------------------------------------------------------------

describe("recorded streams", () => {
  test("OpenAI text with include_usage: every chunk in order, the text, stop, canonical usage", async () => {
    answer = sse(fixture("openai-text-usage.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.equal(chunks.length, 241);
    const text = textOf(chunks);
    assert.ok(text.startsWith('The question "How many angels can dance on the head of a pin?" is a classic'));
    assert.ok(text.endsWith("or how this question is used in modern discourse?"));
    assert.equal(text.length, 1217);
    assert.deepEqual(finishReasons(chunks), ["stop"]);
    // the upstream's own fields are left for the relay to restamp
    assert.equal(chunks[0]?.id, "chatcmpl-BwoiPTGRbKkY5rncfaM0s9KtWrq5N");
    assert.equal(chunks[0]?.created, 1753357673);
    assert.equal(chunks[0]?.model, "gpt-4.1-2025-04-14");
    // `usage: null` on every chunk but the last reads as no usage
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === undefined));
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, {
      prompt: 19,
      completion: 238,
      cachedInput: 0,
      cacheWrite: 0,
      reasoning: 0,
      details: {
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
    });
  });

  test("OpenAI tool call: the call's id, name and arguments, tool_calls, usage", async () => {
    answer = sse(fixture("openai-tool-call-usage.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.deepEqual(toolCalls(chunks), [
      { id: "call_HjeqP7YeRkoNj0de9e3U4X4B", name: "read_file", arguments: '{"path":"README.md"}' },
    ]);
    assert.equal(chunks[0]?.choices[0]?.delta.content, null);
    assert.deepEqual(finishReasons(chunks), ["tool_calls"]);
    assert.equal(chunks.at(-1)?.usage?.prompt, 60);
    assert.equal(chunks.at(-1)?.usage?.completion, 15);
  });

  test("OpenAI parallel tool calls: two calls, told apart by index", async () => {
    answer = sse(fixture("openai-parallel-tool-calls.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.deepEqual(toolCalls(chunks), [
      {
        id: "call_JMW1whyEaYG438VE1OIflxA2",
        name: "GetWeatherArgs",
        arguments: '{"city": "Edinburgh", "country": "GB", "units": "c"}',
      },
      {
        id: "call_DNYTawLBoN8fj3KN6qU9N1Ou",
        name: "get_stock_price",
        arguments: '{"ticker": "AAPL", "exchange": "NASDAQ"}',
      },
    ]);
    assert.deepEqual(finishReasons(chunks), ["tool_calls"]);
    assert.deepEqual(chunks.at(-1)?.usage, {
      prompt: 149,
      completion: 60,
      cachedInput: 0,
      cacheWrite: 0,
      reasoning: 0,
      details: { completion_tokens_details: { reasoning_tokens: 0 } },
    });
  });

  test("a proxy's stream without object or mid-stream finish_reason, usage on its finish chunk", async () => {
    answer = sse(fixture("copilot-claude-tool-call.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(error, undefined);
    assert.equal(chunks.length, 5);
    assert.deepEqual(
      chunks.map((c) => c.choices[0]?.finish_reason),
      [null, null, null, null, "tool_calls"],
    );
    assert.deepEqual(toolCalls(chunks), [
      {
        id: "toolu_vrtx_01CvBi1d4qpKTG2PCuc9wDbZ",
        name: "bmcp_coder_coder_list_workspaces",
        arguments: '{"owner": "me"}',
      },
    ]);
    const last = chunks.at(-1)!;
    assert.equal(last.choices.length, 1, "the usage rides on the finish chunk itself");
    assert.equal(last.usage?.prompt, 25716);
    assert.equal(last.usage?.completion, 65);
    assert.equal(last.usage?.cachedInput, 20470);
  });

  test("vLLM: extra choice fields (stop_reason) pass through; a stream without [DONE] is a network failure", async () => {
    answer = sse(fixture("vllm-stop-reason.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(chunks.length, 4);
    assert.equal(textOf(chunks), "가요?");
    assert.equal(chunks[0]?.model, "/home/jovyan/qwen3-8b");
    assert.deepEqual(chunks[3]?.choices[0], {
      index: 0,
      delta: { content: "" },
      logprobs: null,
      finish_reason: "stop",
      stop_reason: null,
    });
    assertUpstreamError(error, {
      failure: "network",
      retryable: true,
      message: "the upstream stream ended before it was complete",
    });
  });

  test("Ollama: short ids, role on every delta and the text pass through", async () => {
    answer = sse(fixture("ollama-empty-finish-reason.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(chunks.length, 5);
    assert.equal(textOf(chunks), " Hello there! I'");
    assert.ok(chunks.every((c) => c.id === "chatcmpl-693" && c.choices[0]?.delta.role === "assistant"));
    // the recording stops mid-answer, without [DONE]
    assertUpstreamError(error, { failure: "network", retryable: true });
  });

  test("Ollama's empty finish_reason on every chunk is not a finish", async () => {
    answer = sse(fixture("ollama-empty-finish-reason.sse"));
    const { chunks } = await drain(provider().stream(call({ stream: true })));
    assert.deepEqual(
      chunks.map((c) => c.choices[0]?.finish_reason),
      [null, null, null, null, null],
    );
  });

  test("an error event inside a 200 stream: the chunks before it, then a status failure", async () => {
    answer = sse(fixture("openai-error-in-stream.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(chunks.length, 4);
    assert.equal(textOf(chunks), 'The question "');
    assertUpstreamError(error, {
      failure: "status",
      status: undefined,
      retryable: true,
      message:
        "the upstream reported an error: The server had an error while processing your request. Sorry about that!",
    });
  });

  test("a stream cut before [DONE]: the chunks that came, then a network failure", async () => {
    answer = sse(fixture("openai-cut-before-done.sse"));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(chunks.length, 4);
    assertUpstreamError(error, {
      failure: "network",
      retryable: true,
      message: "the upstream stream ended before it was complete",
    });
  });

  test("a stream cut in the middle of an event is a retryable failure, not a chunk", async () => {
    const bytes = fixture("openai-cut-before-done.sse");
    answer = sse(bytes.subarray(0, bytes.length - 40));
    const { chunks, error } = await drain(provider().stream(call({ stream: true })));
    assert.equal(chunks.length, 3);
    assert.ok(error instanceof UpstreamError);
    assert.equal(error.retryable, true);
  });
});

describe("connections", () => {
  test("a stream read to its [DONE] leaves the connection open for the next call", async () => {
    const bytes = fixture("openai-tool-call-usage.sse");
    // The response ends a moment after [DONE]: an adapter that stopped reading at [DONE]
    // would destroy the body before its end, and the connection with it.
    answer = (res) => {
      res.writeHead(200, { "content-type": "text/event-stream" }).write(bytes);
      setTimeout(() => res.end(), 50);
    };
    const p = provider({ max_connections: 1 });
    for (let i = 0; i < 2; i++)
      assert.equal((await drain(p.stream(call({ stream: true })))).error, undefined);
    assert.equal(received.length, 2);
    assert.equal(received[0]?.port, received[1]?.port);
  });
});

// --- whole completions --------------------------------------------------------------------

describe("complete", () => {
  test("the completion as sent, with usage in our figures; the body has no stream fields", async () => {
    answer = json(200, {
      id: "chatcmpl-BwkyFElDIr1egmFyfQ9z4vPBto7m2",
      object: "chat.completion",
      created: 1753343279,
      model: "gpt-4.1-2025-04-14",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_KjzAbhiZC6nk81tQzL7pwlpc",
                type: "function",
                function: { name: "read_file", arguments: '{"path":"README.md"}' },
              },
            ],
            refusal: null,
            annotations: [],
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
      usage: {
        prompt_tokens: 60,
        completion_tokens: 15,
        total_tokens: 75,
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      },
      service_tier: "default",
      system_fingerprint: "fp_b3f1157249",
    });
    const completion = await provider().complete(call({ max_completion_tokens: 1000 }));
    assert.equal(received.length, 1);
    assert.equal("stream" in received[0]!.body, false);
    assert.equal(received[0]?.body.max_completion_tokens, 256);
    assert.equal(completion.choices[0]?.finish_reason, "tool_calls");
    assert.equal(completion.system_fingerprint, "fp_b3f1157249");
    assert.deepEqual(completion.usage, {
      prompt: 60,
      completion: 15,
      cachedInput: 0,
      cacheWrite: 0,
      reasoning: 0,
      details: {
        prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
      },
    });
  });

  test("a reply that is not a chat completion is malformed", async () => {
    answer = json(200, { object: "list", data: [] });
    await assert.rejects(provider().complete(call()), (err) => {
      assertUpstreamError(err, { failure: "malformed", retryable: true });
      return true;
    });
  });

  test("a 200 reply that is not JSON is malformed", async () => {
    answer = (res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>Bad Gateway</html>");
    await assert.rejects(provider().complete(call()), (err) => {
      assertUpstreamError(err, { failure: "malformed", retryable: true });
      return true;
    });
  });
});

// --- failures -----------------------------------------------------------------------------

describe("failures", () => {
  test("429 with retry-after: 7 is retryable after 7000 ms, and the adapter does not retry itself", async () => {
    answer = json(
      429,
      {
        error: {
          message: "Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit 30000, Used 30000.",
          type: "tokens",
          param: null,
          code: "rate_limit_exceeded",
        },
      },
      { "retry-after": "7" },
    );
    await assert.rejects(
      drain(provider().stream(call({ stream: true }))).then((r) => Promise.reject(r.error)),
      (err) => {
        assertUpstreamError(err, {
          failure: "status",
          status: 429,
          retryable: true,
          message: /^the upstream answered HTTP 429: Rate limit reached for gpt-4\.1/,
        });
        assert.equal(err.retryAfterMs, 7000);
        return true;
      },
    );
    assert.equal(received.length, 1);
  });

  test("400 is not retryable and carries the upstream's reason", async () => {
    const reason =
      "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 3148588 tokens. Please reduce the length of the messages.";
    answer = json(400, {
      error: {
        message: reason,
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    });
    await assert.rejects(provider().complete(call()), (err) => {
      assertUpstreamError(err, {
        failure: "status",
        status: 400,
        retryable: false,
        message: `the upstream answered HTTP 400: ${reason}`,
      });
      assert.equal(err.retryAfterMs, undefined);
      return true;
    });
    assert.equal(received.length, 1);
  });

  test("the upstream's message is sanitised: no key, no URL", async () => {
    answer = json(401, {
      error: {
        message:
          "Incorrect API key provided: sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789. You can find your API key at https://platform.openai.com/account/api-keys.",
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      },
    });
    await assert.rejects(provider().complete(call()), (err) => {
      assertUpstreamError(err, { failure: "status", status: 401, retryable: false });
      assert.equal(err.refused, "key");
      assert.match(err.message, /^the upstream answered HTTP 401: Incorrect API key provided: /);
      for (const secret of [
        "sk-proj",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "https://",
        "platform.openai.com",
      ])
        assert.equal(err.message.includes(secret), false, `${secret} in ${err.message}`);
      return true;
    });
  });

  test("retry-after-ms (OpenAI, Azure) wins over retry-after; a 403 is a refused key too", async () => {
    answer = json(429, { error: { message: "slow down" } }, { "retry-after-ms": "1500", "retry-after": "9" });
    await assert.rejects(provider().complete(call()), (err) => {
      assertUpstreamError(err, { failure: "status", status: 429, retryable: true });
      assert.equal(err.retryAfterMs, 1500);
      return true;
    });
    answer = json(403, { error: { message: "You are not allowed to sample from this model" } });
    await assert.rejects(provider().complete(call()), (err) => {
      assertUpstreamError(err, { failure: "status", status: 403, retryable: false });
      assert.equal(err.refused, "key");
      return true;
    });
  });

  test("an error body that is not JSON gives the status alone", async () => {
    answer = (res) =>
      res.writeHead(502, { "content-type": "text/html" }).end("<html><h1>502 Bad Gateway</h1></html>");
    await assert.rejects(provider().complete(call()), (err) => {
      assertUpstreamError(err, {
        failure: "status",
        status: 502,
        retryable: true,
        message: "the upstream answered HTTP 502",
      });
      return true;
    });
  });

  test("an event that is not JSON, or not a chunk, is malformed", async () => {
    for (const body of [
      "data: {not json\n\ndata: [DONE]\n\n",
      'data: {"object":"chat.completion.chunk"}\n\ndata: [DONE]\n\n',
    ]) {
      answer = sse(body);
      const { chunks, error } = await drain(provider().stream(call({ stream: true })));
      assert.deepEqual(chunks, []);
      assertUpstreamError(error, { failure: "malformed", retryable: true });
    }
  });

  test("an upstream that cannot be reached is a network failure", async () => {
    const closed = createServer();
    const url = await listenForTests(closed, 0, "127.0.0.1");
    await new Promise((resolve) => closed.close(resolve));
    const p = provider({ base_url: url });
    await assert.rejects(p.complete(call()), (err) => {
      assertUpstreamError(err, { failure: "network", retryable: true, message: "cannot reach the upstream" });
      return true;
    });
  });

  test("no response headers within first_byte_ms is a timeout", async () => {
    answer = () => {}; // never answers
    const p = provider({ timeouts: { first_byte_ms: 100 } });
    await assert.rejects(p.complete(call()), (err) => {
      assertUpstreamError(err, {
        failure: "timeout",
        retryable: true,
        message: "the upstream did not start answering in time",
      });
      return true;
    });
  });

  test("silence longer than idle_ms in the middle of a stream is a timeout", async () => {
    answer = openStream().answer;
    const { chunks, error } = await drain(
      provider({ timeouts: { idle_ms: 100 } }).stream(call({ stream: true })),
    );
    assert.equal(chunks.length, 1);
    assertUpstreamError(error, {
      failure: "timeout",
      retryable: true,
      message: "the upstream went silent in the middle of its answer",
    });
  });

  test("the total timeout ends a stream that is still open", async () => {
    answer = (res) => res.writeHead(200, { "content-type": "text/event-stream" }).write(": keep-alive\n\n");
    const p = provider({ timeouts: { total_ms: 100 } });
    const { error } = await drain(p.stream(call({ stream: true })));
    assertUpstreamError(error, {
      failure: "timeout",
      retryable: true,
      message: "the upstream did not finish within the total timeout",
    });
  });

  test("the caller's abort ends the stream with the caller's own reason, and the connection is closed", async () => {
    const upstream = openStream();
    answer = upstream.answer;
    const controller = new AbortController();
    const gone = new Error("the client closed the connection");
    const stream = provider().stream(call({ stream: true }, controller.signal));
    const { chunks, error } = await drain(
      (async function* () {
        for await (const c of stream) {
          yield c;
          controller.abort(gone);
        }
      })(),
    );
    assert.equal(chunks.length, 1);
    assert.equal(error, gone);
    await upstream.closed;
  });

  test("a consumer that stops reading early closes the upstream response", async () => {
    const upstream = openStream();
    answer = upstream.answer;
    for await (const _ of provider().stream(call({ stream: true }))) break;
    await upstream.closed;
  });
});
