import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { MOCK_REASONING, type MockUpstream, startMockUpstream } from "./mock-openai-upstream.ts";
import { MOCK_TOOL_TEXT } from "./mock-provider.ts";

const MOCK_FILE = fileURLToPath(new URL("./mock-openai-upstream.ts", import.meta.url));

let mock: MockUpstream;
let keyed: MockUpstream;
let slow: MockUpstream;
let client: OpenAI;

before(async () => {
  mock = await startMockUpstream();
  keyed = await startMockUpstream({ apiKey: "sk-test-key" });
  slow = await startMockUpstream({ chunkDelayMs: 40 });
  client = new OpenAI({ apiKey: "sk-anything", baseURL: mock.url, maxRetries: 0 });
});

after(async () => {
  await Promise.all([mock.close(), keyed.close(), slow.close()]);
});

function post(base: MockUpstream | string, body: unknown, init: RequestInit = {}): Promise<Response> {
  const url = typeof base === "string" ? base : base.url;
  return fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(init.headers ?? {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(init.signal ? { signal: init.signal } : {}),
  });
}

/** Splits an SSE body into its `data:` payloads, asserting the exact `data: <payload>\n\n` framing. */
function sseEvents(text: string): string[] {
  assert.ok(text.endsWith("\n\n"), "SSE body ends with a blank line");
  const events = text.slice(0, -2).split("\n\n");
  for (const e of events) {
    assert.ok(e.startsWith("data: "), `event is framed as "data: ...": ${JSON.stringify(e)}`);
    assert.ok(!e.includes("\n"), "each event is a single data line");
  }
  return events.map((e) => e.slice("data: ".length));
}

/** `Response.json()` is typed `unknown`; these tests inspect arbitrary shapes. */
async function json(res: Response): Promise<any> {
  return res.json();
}

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) assert.fail(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Reads a streamed body until it ends or errors; returns the text read and the error, if any. */
async function readUntilEnd(res: Response): Promise<{ text: string; error: unknown }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: undefined };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

describe("OpenAI SDK against the mock", () => {
  test("non-streaming completion has OpenAI's exact shape", async () => {
    mock.reset();
    const completion = await client.chat.completions.create({
      model: "gpt-test-1",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Say hello please mock:tokens=4" },
      ],
    });
    assert.match(completion.id, /^chatcmpl-[A-Za-z0-9]{29}$/);
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.model, "gpt-test-1");
    assert.equal(typeof completion.created, "number");
    assert.ok(Math.abs(completion.created - Date.now() / 1000) < 5);
    assert.equal(typeof completion.system_fingerprint, "string");
    assert.deepEqual(completion.choices, [
      {
        index: 0,
        message: { role: "assistant", content: "Hello world this is", refusal: null },
        logprobs: null,
        finish_reason: "stop",
      },
    ]);
    // prompt: "You are terse." (3) + "Say hello please mock:tokens=4" (4)
    assert.deepEqual(completion.usage, {
      prompt_tokens: 7,
      completion_tokens: 4,
      total_tokens: 11,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
    assert.equal(mock.requests.length, 1);
    const rec = mock.requests[0]!;
    assert.equal(rec.method, "POST");
    assert.equal(rec.path, "/v1/chat/completions");
    assert.equal(rec.headers.authorization, "Bearer sk-anything");
    assert.equal(rec.body.model, "gpt-test-1");
    assert.equal(rec.body.messages.length, 2);
    assert.ok(Math.abs(rec.at - Date.now()) < 5000);
    assert.equal(mock.inFlight(), 0);
    assert.equal(mock.aborted(), 0);
  });

  test("streaming with include_usage: role chunk, content chunks, finish chunk, usage chunk", async () => {
    const stream = await client.chat.completions.create({
      model: "gpt-test-2",
      messages: [{ role: "user", content: [{ type: "text", text: "count to three" }] }],
      max_tokens: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);

    // 1 role chunk + 3 content chunks + 1 finish chunk + 1 usage chunk
    assert.equal(chunks.length, 6);
    const ids = new Set(chunks.map((c) => c.id));
    assert.equal(ids.size, 1, "every chunk shares the completion id");
    assert.match(chunks[0]!.id, /^chatcmpl-/);
    for (const c of chunks) {
      assert.equal(c.object, "chat.completion.chunk");
      assert.equal(c.model, "gpt-test-2");
      assert.equal(c.created, chunks[0]!.created);
    }
    assert.deepEqual(chunks[0]!.choices, [
      {
        index: 0,
        delta: { role: "assistant", content: "", refusal: null },
        logprobs: null,
        finish_reason: null,
      },
    ]);
    assert.deepEqual(
      chunks.slice(1, 4).map((c) => c.choices[0]!.delta),
      [{ content: "Hello" }, { content: " world" }, { content: " this" }],
    );
    // max_tokens reached exactly -> "length"
    assert.deepEqual(chunks[4]!.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: "length" }]);
    for (const c of chunks.slice(0, 5)) assert.equal(c.usage, null, "earlier chunks carry usage: null");
    const last = chunks[5]!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(last.usage, {
      prompt_tokens: 3,
      completion_tokens: 3,
      total_tokens: 6,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
  });

  test("streamed tool call is reassembled by the SDK", async () => {
    const runner = client.chat.completions.stream({
      model: "gpt-test-3",
      messages: [{ role: "user", content: "weather in Paris? mock:tool" }],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            parameters: { type: "object", properties: { city: { type: "string" } } },
          },
        },
      ],
    });
    let argDeltas = 0;
    runner.on("chunk", (chunk) => {
      if (chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments) argDeltas++;
    });
    const final = await runner.finalChatCompletion();
    const choice = final.choices[0]!;
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, null);
    const calls = choice.message.tool_calls ?? [];
    assert.equal(calls.length, 1);
    const call = calls[0]!;
    assert.equal(call.type, "function");
    assert.match(call.id, /^call_[A-Za-z0-9_]+$/);
    assert.ok(call.type === "function");
    assert.equal(call.function.name, "get_weather");
    assert.equal(call.function.arguments, '{"city":"Paris"}');
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
    assert.ok(argDeltas > 1, "arguments arrive in several pieces");
  });

  test("non-streaming tool call and refusal", async () => {
    const tool = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "mock:tool" }],
    });
    assert.equal(tool.choices[0]!.finish_reason, "tool_calls");
    assert.equal(tool.choices[0]!.message.content, null);
    const call = tool.choices[0]!.message.tool_calls![0]!;
    assert.ok(call.type === "function");
    assert.deepEqual(call.function, { name: "get_weather", arguments: '{"city":"Paris"}' });

    const refusal = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "do something bad mock:refusal" }],
    });
    assert.deepEqual(refusal.choices[0]!.message, {
      role: "assistant",
      content: null,
      refusal: "I can't help with that.",
    });
    assert.equal(refusal.choices[0]!.finish_reason, "stop");
  });

  test("mock:call=NAME calls the request's function or custom tool; a tool result is answered", async () => {
    const tools = [
      {
        type: "function" as const,
        function: { name: "shell", parameters: { type: "object", properties: { cmd: { type: "string" } } } },
      },
      { type: "custom" as const, custom: { name: "apply_patch" } },
    ];
    const fn = await client.chat.completions.create({
      model: "m",
      tools,
      messages: [{ role: "user", content: "mock:call=shell" }],
    });
    const fnCall = fn.choices[0]!.message.tool_calls![0]!;
    assert.ok(fnCall.type === "function");
    assert.deepEqual(JSON.parse(fnCall.function.arguments), { cmd: MOCK_TOOL_TEXT });

    const stream = await client.chat.completions.create({
      model: "m",
      tools,
      stream: true,
      messages: [{ role: "user", content: "mock:call=apply_patch" }],
    });
    let input = "";
    let name = "";
    for await (const chunk of stream)
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        name ||= call.custom?.name ?? "";
        input += call.custom?.input ?? "";
      }
    assert.equal(name, "apply_patch");
    assert.equal(input, MOCK_TOOL_TEXT);

    const answered = await client.chat.completions.create({
      model: "m",
      tools,
      messages: [
        { role: "user", content: "mock:call=apply_patch" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "custom", custom: { name: "apply_patch", input: MOCK_TOOL_TEXT } }],
        },
        { role: "tool", tool_call_id: "c1", content: "Done" },
      ],
    });
    assert.equal(answered.choices[0]!.finish_reason, "stop", "the tool's result is answered with text");
  });

  test("mock:reasoning sends reasoning_content and counts it as reasoning tokens", async () => {
    const r = await client.chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: "mock:reasoning mock:tokens=2" }],
    });
    assert.equal((r.choices[0]!.message as any).reasoning_content, MOCK_REASONING);
    assert.equal(r.usage!.completion_tokens, 5);
    assert.equal(r.usage!.completion_tokens_details!.reasoning_tokens, 3);
  });

  test("tools and tool calls of shapes OpenAI does not take are refused as OpenAI refuses them", async () => {
    const refused = async (body: Record<string, unknown>) => {
      const res = await post(mock, { model: "m", messages: [{ role: "user", content: "x" }], ...body });
      assert.equal(res.status, 400);
      return (await json(res)).error;
    };
    assert.deepEqual(await refused({ tools: [{ type: "web_search" }] }), {
      message: "Invalid value: 'web_search'. Supported values are: 'function' and 'custom'.",
      type: "invalid_request_error",
      param: "tools[0].type",
      code: "invalid_value",
    });
    assert.equal((await refused({ tools: [{ type: "custom", custom: {} }] })).param, "tools[0].custom.name");
    assert.equal(
      (
        await refused({
          messages: [
            { role: "user", content: "x" },
            { role: "assistant", tool_calls: [{ id: "c", type: "custom", custom: { name: "p" } }] },
          ],
        })
      ).param,
      "messages[1].tool_calls[0].custom.input",
    );
  });
});

describe("raw HTTP", () => {
  test("exact SSE framing, headers and [DONE]", async () => {
    const res = await post(mock, {
      model: "m-sse",
      messages: [{ role: "user", content: "hi mock:tokens=2" }],
      stream: true,
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
    const text = await res.text();
    const events = sseEvents(text);
    assert.equal(events.at(-1), "[DONE]");
    assert.ok(text.endsWith("data: [DONE]\n\n"));
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    assert.equal(chunks.length, 4);
    // Key order and exact bytes of the first chunk.
    const c0 = chunks[0];
    assert.equal(
      events[0],
      `{"id":"${c0.id}","object":"chat.completion.chunk","created":${c0.created},"model":"m-sse",` +
        `"system_fingerprint":"${c0.system_fingerprint}","choices":[{"index":0,"delta":{"role":"assistant",` +
        `"content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`,
    );
    // Without stream_options.include_usage, chunks have no usage key at all.
    for (const c of chunks) assert.equal("usage" in c, false);
    assert.equal(chunks[1].choices[0].delta.content, "Hello");
    assert.equal(chunks[2].choices[0].delta.content, " world");
    assert.deepEqual(chunks[3].choices[0], { index: 0, delta: {}, logprobs: null, finish_reason: "stop" });
  });

  test("JSON responses are application/json", async () => {
    const res = await post(mock, { model: "m", messages: [{ role: "user", content: "hi" }] });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/json");
    const body = await json(res);
    assert.equal(body.choices[0].message.content.split(" ").length, 10, "default length is 10 tokens");
    assert.equal(body.usage.completion_tokens, 10);
  });

  test("mock:status=500 returns OpenAI's error envelope with a leaky message", async () => {
    const res = await post(mock, {
      model: "m",
      messages: [{ role: "user", content: "boom mock:status=500" }],
    });
    assert.equal(res.status, 500);
    assert.equal(res.headers.get("content-type"), "application/json");
    const body = await json(res);
    assert.deepEqual(Object.keys(body), ["error"]);
    assert.deepEqual(Object.keys(body.error), ["message", "type", "param", "code"]);
    assert.equal(body.error.type, "server_error");
    assert.equal(body.error.param, null);
    assert.equal(body.error.code, null);
    assert.match(body.error.message, /^The server had an error while processing your request\./);
    assert.ok(body.error.message.includes("sk-upstream-secret-123"));
    assert.ok(body.error.message.includes("http://10.0.0.5:8000/internal"));
  });

  test("mock:status=429 and =400 envelopes (also for stream requests)", async () => {
    const r429 = await post(mock, {
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "mock:status=429" }],
    });
    assert.equal(r429.status, 429);
    assert.equal(r429.headers.get("content-type"), "application/json");
    const b429 = await json(r429);
    assert.equal(b429.error.code, "rate_limit_exceeded");
    const r400 = await post(mock, { model: "m", messages: [{ role: "user", content: "mock:status=400" }] });
    assert.equal(r400.status, 400);
    assert.equal((await json(r400)).error.type, "invalid_request_error");
  });

  test("mock:retry-after sends retry-after with the status; setDirectives applies to one mock's every request", async () => {
    const limited = await post(mock, {
      model: "m",
      messages: [{ role: "user", content: "mock:status=429 mock:retry-after=7" }],
    });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get("retry-after"), "7");
    const own = await startMockUpstream();
    try {
      own.setDirectives("mock:status=503");
      const failed = await post(own, { model: "m", messages: [{ role: "user", content: "hi" }] });
      assert.equal(failed.status, 503);
      await failed.text();
      const other = await post(mock, { model: "m", messages: [{ role: "user", content: "hi" }] });
      assert.equal(other.status, 200, "other mocks are not affected");
      await other.text();
      own.setDirectives("");
      const back = await post(own, { model: "m", messages: [{ role: "user", content: "hi" }] });
      assert.equal(back.status, 200);
      await back.text();
    } finally {
      await own.close();
    }
  });

  test("mock:no-usage omits usage in JSON and in the stream", async () => {
    const res = await post(mock, { model: "m", messages: [{ role: "user", content: "hi mock:no-usage" }] });
    const body = await json(res);
    assert.equal("usage" in body, false);
    assert.equal(body.choices[0].message.content.split(" ").length, 10);

    const sres = await post(mock, {
      model: "m",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hi mock:no-usage mock:tokens=3" }],
    });
    const events = sseEvents(await sres.text());
    assert.equal(events.at(-1), "[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    assert.equal(chunks.length, 5);
    for (const c of chunks) {
      assert.equal("usage" in c, false);
      assert.equal(c.choices.length, 1);
    }
  });

  test("mock:drop-after=2 ends the stream abruptly after two content chunks, without [DONE]", async () => {
    mock.reset();
    const res = await post(mock, {
      model: "m",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "mock:drop-after=2 mock:tokens=6" }],
    });
    assert.equal(res.status, 200);
    const { text, error } = await readUntilEnd(res);
    assert.ok(error !== undefined, "the body errors (socket destroyed mid-chunked-body)");
    assert.ok(!text.includes("[DONE]"));
    const chunks = sseEvents(text).map((e) => JSON.parse(e));
    assert.equal(chunks.length, 3, "role chunk + 2 content chunks");
    assert.deepEqual(
      chunks.slice(1).map((c) => c.choices[0].delta.content),
      ["Hello", " world"],
    );
    await waitFor(() => mock.inFlight() === 0, 1000, "inFlight back to 0");
    assert.equal(mock.aborted(), 0, "a drop by the mock is not a client abort");

    // Non-streaming: the socket is destroyed without an answer.
    await assert.rejects(
      post(mock, { model: "m", messages: [{ role: "user", content: "mock:drop-after=0" }] }),
    );
  });

  test("mock:hang + client abort increments aborted() and brings inFlight() back to 0", async () => {
    mock.reset();
    const ac = new AbortController();
    const pending = post(
      mock,
      { model: "m", messages: [{ role: "user", content: "mock:hang" }] },
      { signal: ac.signal },
    );
    pending.catch(() => {});
    await waitFor(() => mock.inFlight() === 1, 1000, "the hanging request to be in flight");
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(mock.inFlight(), 1, "still hanging");
    assert.equal(mock.aborted(), 0);
    ac.abort();
    await assert.rejects(pending, { name: "AbortError" });
    await waitFor(() => mock.aborted() === 1 && mock.inFlight() === 0, 1000, "abort to be observed");
  });

  test("mock:hang-after=1 stalls the stream until the client aborts", async () => {
    mock.reset();
    const ac = new AbortController();
    const res = await post(
      mock,
      { model: "m", stream: true, messages: [{ role: "user", content: "mock:hang-after=1" }] },
      { signal: ac.signal },
    );
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while ((text.match(/\n\n/g) ?? []).length < 2) {
      const { value, done } = await reader.read();
      assert.equal(done, false);
      text += decoder.decode(value, { stream: true });
    }
    assert.equal(sseEvents(text).length, 2, "role chunk + 1 content chunk");
    const stalled = await Promise.race([
      reader.read().then(() => "data"),
      new Promise((r) => setTimeout(() => r("stalled"), 150)),
    ]);
    assert.equal(stalled, "stalled");
    assert.equal(mock.inFlight(), 1);
    ac.abort();
    await waitFor(() => mock.aborted() === 1 && mock.inFlight() === 0, 1000, "abort to be observed");
  });

  test("apiKey enforcement: 401 envelope without or with a wrong key, 200 with the right one", async () => {
    const none = await post(keyed, { model: "m", messages: [{ role: "user", content: "hi" }] });
    assert.equal(none.status, 401);
    const noneBody = await json(none);
    assert.equal(noneBody.error.type, "invalid_request_error");
    assert.deepEqual(Object.keys(noneBody.error), ["message", "type", "param", "code"]);

    const wrong = await post(
      keyed,
      { model: "m", messages: [{ role: "user", content: "hi" }] },
      { headers: { authorization: "Bearer sk-wrong" } },
    );
    assert.equal(wrong.status, 401);
    const wrongBody = await json(wrong);
    assert.equal(wrongBody.error.code, "invalid_api_key");
    assert.ok(!wrongBody.error.message.includes("sk-wrong"), "the key is not echoed");

    const models = await fetch(`${keyed.url}/models`);
    assert.equal(models.status, 401);

    const ok = await new OpenAI({
      apiKey: "sk-test-key",
      baseURL: keyed.url,
      maxRetries: 0,
    }).chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi mock:tokens=1" }] });
    assert.equal(ok.choices[0]!.message.content, "Hello");

    await assert.rejects(
      new OpenAI({ apiKey: "sk-nope", baseURL: keyed.url, maxRetries: 0 }).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "hi" }],
      }),
      (err: unknown) => err instanceof OpenAI.AuthenticationError && err.status === 401,
    );
  });

  test("several keys: each is accepted; a rate-limited one gets OpenAI's 429, an unknown one 401", async () => {
    const limited = new Set<string>();
    const pooled = await startMockUpstream({
      apiKey: ["sk-one-key", "sk-two-key"],
      rateLimitedKeys: limited,
    });
    try {
      const ask = (key: string) =>
        new OpenAI({ apiKey: key, baseURL: pooled.url, maxRetries: 0 }).chat.completions.create({
          model: "m",
          messages: [{ role: "user", content: "hi mock:tokens=1" }],
        });
      for (const key of ["sk-one-key", "sk-two-key"])
        assert.equal((await ask(key)).choices[0]!.message.content, "Hello");
      limited.add("sk-two-key");
      await assert.rejects(
        ask("sk-two-key"),
        (err: unknown) =>
          err instanceof OpenAI.RateLimitError &&
          (err.error as { code?: string }).code === "rate_limit_exceeded",
      );
      assert.equal((await ask("sk-one-key")).choices[0]!.message.content, "Hello");
      await assert.rejects(ask("sk-three-key"), (err: unknown) => err instanceof OpenAI.AuthenticationError);
    } finally {
      await pooled.close();
    }
  });

  test("n=2 returns two choices and counts completion tokens for both", async () => {
    const res = await post(mock, {
      model: "m",
      n: 2,
      max_completion_tokens: 5,
      messages: [{ role: "user", content: "two please mock:tokens=3" }],
    });
    const body = await json(res);
    assert.equal(body.choices.length, 2);
    assert.deepEqual(
      body.choices.map((c: any) => [c.index, c.message.content, c.finish_reason]),
      [
        [0, "Hello world this", "stop"],
        [1, "Hello world this", "stop"],
      ],
    );
    assert.equal(body.usage.completion_tokens, 6);
    assert.equal(body.usage.prompt_tokens, 3);
    assert.equal(body.usage.total_tokens, 9);

    const sres = await post(mock, {
      model: "m",
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "mock:tokens=2" }],
    });
    const chunks = sseEvents(await sres.text())
      .slice(0, -1)
      .map((e) => JSON.parse(e));
    const text = ["", ""];
    for (const c of chunks) for (const ch of c.choices) text[ch.index] += ch.delta.content ?? "";
    assert.deepEqual(text, ["Hello world", "Hello world"]);
    assert.equal(chunks.at(-1).usage.completion_tokens, 4);
  });

  test("directives: tokens capped by max_tokens, text=WORD, latency, last user message only", async () => {
    const capped = await json(
      await post(mock, { model: "m", max_tokens: 4, messages: [{ role: "user", content: "mock:tokens=9" }] }),
    );
    assert.equal(capped.usage.completion_tokens, 4);
    assert.equal(capped.choices[0].finish_reason, "length");

    const word = await json(
      await post(mock, { model: "m", messages: [{ role: "user", content: "mock:text=pong mock:tokens=3" }] }),
    );
    assert.equal(word.choices[0].message.content, "pong pong pong");

    const onlyLast = await json(
      await post(mock, {
        model: "m",
        messages: [
          { role: "user", content: "mock:status=500" },
          { role: "assistant", content: "ok" },
          {
            role: "user",
            content: [
              { type: "text", text: "again" },
              { type: "text", text: "mock:tokens=2" },
            ],
          },
        ],
      }),
    );
    assert.equal(onlyLast.choices[0].message.content, "Hello world");
    assert.equal(onlyLast.usage.prompt_tokens, 4);

    const t0 = performance.now();
    const slowRes = await post(mock, {
      model: "m",
      messages: [{ role: "user", content: "mock:latency=150" }],
    });
    assert.equal(slowRes.status, 200);
    assert.ok(performance.now() - t0 >= 140, "latency directive delays the response");
    await slowRes.arrayBuffer();
  });

  test("chunkDelayMs spaces stream chunks", async () => {
    const t0 = performance.now();
    const res = await post(slow, {
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "mock:tokens=3" }],
    });
    const events = sseEvents(await res.text());
    const elapsed = performance.now() - t0;
    assert.equal(events.at(-1), "[DONE]");
    // steps: role, 3 content, finish -> 4 delays of 40ms
    assert.ok(elapsed >= 150, `took ${elapsed}ms`);
    await waitFor(() => slow.inFlight() === 0, 1000, "inFlight back to 0");

    // Faults also work on the timed path.
    const dropped = await post(slow, {
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "mock:drop-after=1 mock:tokens=5" }],
    });
    const { text, error } = await readUntilEnd(dropped);
    assert.ok(error !== undefined);
    assert.equal(sseEvents(text).length, 2, "role chunk + 1 content chunk");
    assert.equal(slow.aborted(), 0);
  });

  test("validation errors, unknown paths and /v1/models", async () => {
    const bad = await post(mock, "{not json");
    assert.equal(bad.status, 400);
    assert.equal((await json(bad)).error.type, "invalid_request_error");

    const noModel = await post(mock, { messages: [{ role: "user", content: "hi" }] });
    assert.equal(noModel.status, 400);
    assert.match((await json(noModel)).error.message, /model/);

    const noMessages = await post(mock, { model: "m" });
    assert.equal(noMessages.status, 400);
    assert.equal((await json(noMessages)).error.param, "messages");

    const unknown = await fetch(`${mock.url}/nope`, { method: "POST", body: "{}" });
    assert.equal(unknown.status, 404);
    const unknownBody = await json(unknown);
    assert.deepEqual(Object.keys(unknownBody.error), ["message", "type", "param", "code"]);

    const models = await fetch(`${mock.url}/models`);
    assert.equal(models.status, 200);
    assert.deepEqual(await json(models), {
      object: "list",
      data: [{ id: "mock-model", object: "model", created: 1700000000, owned_by: "mock" }],
    });
    const list = await client.models.list();
    assert.deepEqual(
      list.data.map((m) => m.id),
      ["mock-model"],
    );
  });

  test("record: false keeps no requests; reset() clears requests and the abort counter", async () => {
    const quiet = await startMockUpstream({ record: false });
    try {
      const res = await post(quiet, { model: "m", messages: [{ role: "user", content: "hi" }] });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      assert.equal(quiet.requests.length, 0);
    } finally {
      await quiet.close();
    }
    const res = await post(mock, { model: "m", messages: [{ role: "user", content: "hi" }] });
    await res.arrayBuffer();
    assert.ok(mock.requests.length > 0);
    const ref = mock.requests;
    mock.reset();
    assert.equal(mock.requests.length, 0);
    assert.equal(ref, mock.requests, "reset clears in place");
    assert.equal(mock.aborted(), 0);
  });

  test('promptCount "template" counts as a chat template does: ceil(JSON characters / 4) + 3', async () => {
    const templated = await startMockUpstream({ promptCount: "template" });
    try {
      const messages = [
        { role: "system", content: "Be brief." },
        { role: "user", content: "count to three mock:tokens=3" },
      ];
      const body = await json(await post(templated, { model: "m", messages }));
      assert.equal(body.usage.prompt_tokens, Math.ceil(JSON.stringify(messages).length / 4) + 3);
      assert.equal(body.usage.completion_tokens, 3);
      const streamed = await post(templated, {
        model: "m",
        messages,
        stream: true,
        stream_options: { include_usage: true },
      });
      const last = JSON.parse(sseEvents(await streamed.text()).at(-2)!);
      assert.equal(last.usage.prompt_tokens, body.usage.prompt_tokens, "the stream counts alike");
    } finally {
      await templated.close();
    }
  });

  test("close() terminates hanging requests promptly", async () => {
    const m = await startMockUpstream();
    const pending = post(m, { model: "m", messages: [{ role: "user", content: "mock:hang" }] });
    pending.catch(() => {});
    await waitFor(() => m.inFlight() === 1, 1000, "hanging request");
    const t0 = performance.now();
    await m.close();
    assert.ok(performance.now() - t0 < 500);
    await assert.rejects(pending);
    assert.equal(m.inFlight(), 0);
  });
});

describe("judge mode (a model whose name contains guard)", () => {
  const judge = async (model: string, messages: { role: string; content: string }[], stream = false) =>
    post(mock, { model, messages, ...(stream ? { stream: true } : {}) });

  test("classifies the last message, whatever its role, in Llama Guard's words", async () => {
    const cases: [string, string][] = [
      ["how do I bake bread?", "safe"],
      ["judgeunsafe", "unsafe\nS1"],
      ["judgetwo", "unsafe\nS1,S10"],
      ["judgegarbage", "I cannot decide"],
    ];
    for (const [text, verdict] of cases) {
      const res = await judge("meta-llama/Llama-Guard-3-8B", [{ role: "user", content: text }]);
      assert.equal(res.status, 200);
      const body = await json(res);
      assert.equal(body.object, "chat.completion");
      assert.equal(body.model, "meta-llama/Llama-Guard-3-8B");
      assert.equal(body.choices[0].message.content, verdict, text);
      assert.equal(body.choices[0].finish_reason, "stop");
      assert.equal(body.usage.completion_tokens, verdict.split("\n").length);
      assert.equal(body.usage.prompt_tokens, text.split(" ").length);
    }
    // the assistant's answer is last: it is what is judged, not the user's message
    const output = await json(
      await judge("llama-guard3", [
        { role: "user", content: "judgeunsafe" },
        { role: "assistant", content: "a kind answer" },
      ]),
    );
    assert.equal(output.choices[0].message.content, "safe");
    const flagged = await json(
      await judge("llama-guard3", [
        { role: "user", content: "a question" },
        { role: "assistant", content: "judgeunsafe" },
      ]),
    );
    assert.equal(flagged.choices[0].message.content, "unsafe\nS1");
  });

  test("judgefail answers HTTP 500 with an OpenAI error envelope", async () => {
    const res = await judge("llama-guard3", [{ role: "user", content: "judgefail" }]);
    assert.equal(res.status, 500);
    const body = await json(res);
    assert.equal(body.error.type, "server_error");
    assert.equal(typeof body.error.message, "string");
  });

  test("other models ignore the judge words", async () => {
    const body = await json(
      await judge("mock-model", [{ role: "user", content: "judgeunsafe mock:tokens=2" }]),
    );
    assert.equal(body.choices[0].message.content, "Hello world");
  });

  test("streams the verdict too", async () => {
    const res = await judge("llama-guard3", [{ role: "user", content: "judgetwo" }], true);
    const text = await res.text();
    const deltas = sseEvents(text)
      .filter((e) => e !== "[DONE]")
      .map((e) => JSON.parse(e).choices[0]?.delta?.content ?? "")
      .join("");
    assert.equal(deltas, "unsafe\nS1,S10");
  });
});

test("runs as a process: prints its URL, serves, exits cleanly on SIGTERM", async () => {
  const child = spawn(process.execPath, [MOCK_FILE, "--port", "0", "--latency", "1", "--no-record"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => {
    stderr += b.toString();
  });
  try {
    const rl = createInterface({ input: child.stdout });
    const [line] = (await once(rl, "line")) as [string];
    const { url } = JSON.parse(line) as { url: string };
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const res = await post(url, { model: "cli", messages: [{ role: "user", content: "mock:tokens=2" }] });
    assert.equal(res.status, 200);
    assert.equal((await json(res)).choices[0].message.content, "Hello world");
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    assert.equal(signal, null, stderr);
    assert.equal(code, 0, stderr);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});

describe("POST /v1/responses (OpenAI's Responses API)", () => {
  const postResponses = (body: unknown) =>
    fetch(`${mock.url}/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const refusedWith = async (body: Record<string, unknown>) => {
    const res = await postResponses({ model: "m", input: "x", ...body });
    assert.equal(res.status, 400);
    return (await json(res)).error;
  };

  test("requests are validated as OpenAI validates them, in its error envelope", async () => {
    assert.deepEqual(await refusedWith({ messages: [] }), {
      message: "Unknown parameter: 'messages'.",
      type: "invalid_request_error",
      param: "messages",
      code: "unknown_parameter",
    });
    assert.equal((await refusedWith({ tools: [{ type: "web_searcher" }] })).param, "tools[0].type");
    assert.equal(
      (await refusedWith({ tools: [{ type: "file_search" }] })).param,
      "tools[0].vector_store_ids",
    );
    assert.equal((await refusedWith({ max_output_tokens: 8 })).code, "integer_below_min_value");
    assert.equal((await refusedWith({ previous_response_id: "resp_1" })).code, "previous_response_not_found");
    assert.equal((await refusedWith({ input: [{ type: "weird" }] })).param, "input[0].type");
    assert.equal((await refusedWith({ input: [{ role: "robot", content: "x" }] })).param, "input[0].role");
    assert.equal(
      (await refusedWith({ store: false, input: [{ type: "reasoning", id: "rs_1", summary: [] }] })).param,
      "input",
    );
  });

  test("web_search: a web_search_call item, then the message; the search's content counted as input", async () => {
    const r = await client.responses.create({
      model: "m",
      input: "news today mock:tokens=4",
      tools: [{ type: "web_search" }],
    });
    assert.deepEqual(
      r.output.map((item) => item.type),
      ["web_search_call", "message"],
    );
    assert.equal(r.output_text, "Hello world this is");
    assert.equal(r.usage!.input_tokens, 3 + 20);
    assert.equal(r.usage!.output_tokens, 4);
    const plain = await client.responses.create({ model: "m", input: "hello mock:tokens=2 mock:cache" });
    assert.deepEqual(
      plain.output.map((item) => item.type),
      ["message"],
    );
    assert.equal(plain.usage!.input_tokens_details.cached_tokens, 3);
  });

  test("the stream: OpenAI's named, numbered events, ending response.completed with the usage", async () => {
    const stream = await client.responses.create({
      model: "m",
      input: "news mock:tokens=3",
      tools: [{ type: "web_search" }],
      stream: true,
    });
    const events: Array<{ type: string; sequence_number: number }> = [];
    for await (const event of stream) events.push(event);
    assert.deepEqual(
      events.slice(0, 7).map((e) => e.type),
      [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_item.done",
      ],
    );
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    const last = events.at(-1)!;
    assert.equal(last.type, "response.completed");
    assert.equal((last as any).response.usage.output_tokens, 3);
    const raw = await fetch(`${mock.url}/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", input: "x mock:tokens=1", stream: true }),
    });
    const text = await raw.text();
    assert.match(text, /^event: response\.created\ndata: \{/, "each event named, as OpenAI sends them");
  });

  test("a bound below the answer: an incomplete Response (max_output_tokens)", async () => {
    const r = await client.responses.create({ model: "m", input: "x mock:tokens=40", max_output_tokens: 16 });
    assert.equal(r.status, "incomplete");
    assert.equal(r.incomplete_details?.reason, "max_output_tokens");
    assert.equal(r.usage!.output_tokens, 16);
  });
});
