import assert from "node:assert/strict";
import { test } from "node:test";
import type { Chunk } from "../../domain/completion.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../prompt-bound.ts";
import type { NativeRequest, UpstreamCall } from "../types.ts";
import { openaiPromptBound, responsesBody } from "./request.ts";
import { ResponsesStreamState, responseCompletion } from "./responses.ts";

const native = (body: Record<string, unknown>): NativeRequest => ({
  api: "responses",
  body,
  headers: {},
  builtinTools: [{ type: "web_search", param: "tools[0]" }],
});

const usage = {
  input_tokens: 120,
  input_tokens_details: { cached_tokens: 20 },
  output_tokens: 30,
  output_tokens_details: { reasoning_tokens: 10 },
  total_tokens: 150,
};

const search = {
  id: "ws_1",
  type: "web_search_call",
  status: "completed",
  action: { type: "search", query: "q" },
};
const message = (text: string) => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text, annotations: [] }],
});

test("the body: the call's model and reserved bound, store false, no previous_response_id", () => {
  const call = { upstreamModel: "gpt-4.1", outputBound: 777 } as UpstreamCall;
  const body = responsesBody(
    call,
    native({
      model: "public",
      input: "x",
      max_output_tokens: 99999,
      store: true,
      previous_response_id: "resp_1",
      stream: true,
    }),
    false,
  );
  assert.deepEqual(body, { model: "gpt-4.1", input: "x", max_output_tokens: 777, store: false });
  assert.equal(responsesBody(call, native({ model: "m", input: "x" }), true).stream, true);
});

test("a Response is the canonical completion: text, usage in our figures, finish; itself the native form", () => {
  const raw = {
    id: "resp_1",
    object: "response",
    status: "completed",
    model: "gpt-4.1",
    output: [search, message("Hi there")],
    usage,
  };
  const completion = responseCompletion(raw);
  assert.equal(completion.choices[0]!.message.content, "Hi there");
  assert.equal(completion.choices[0]!.finish_reason, "stop");
  assert.deepEqual(completion.usage, {
    prompt: 120,
    completion: 30,
    cachedInput: 20,
    cacheWrite: 0,
    reasoning: 10,
  });
  assert.equal(completion.native, raw);
});

test("function calls become tool calls; an incomplete Response is cut (length) or filtered", () => {
  const call = { id: "fc_1", type: "function_call", call_id: "call_1", name: "f", arguments: "{}" };
  const withCall = responseCompletion({
    object: "response",
    status: "completed",
    output: [search, call],
    usage,
  });
  assert.equal(withCall.choices[0]!.finish_reason, "tool_calls");
  assert.deepEqual(withCall.choices[0]!.message.tool_calls, [
    { id: "call_1", type: "function", function: { name: "f", arguments: "{}" } },
  ]);
  const cut = responseCompletion({
    object: "response",
    status: "incomplete",
    incomplete_details: { reason: "max_output_tokens" },
    output: [message("Hi")],
  });
  assert.equal(cut.choices[0]!.finish_reason, "length");
  assert.equal(cut.usage, undefined, "no usage: the relay estimates");
  assert.throws(() => responseCompletion({ object: "chat.completion", choices: [] }), UpstreamError);
});

test("stream: held until the first output item, then every event rides a chunk in order; usage at the end", () => {
  const state = new ResponsesStreamState();
  const read = (data: Record<string, unknown>) => state.read(data.type as string, data);
  assert.deepEqual(read({ type: "response.created", response: { status: "in_progress" } }), []);
  assert.deepEqual(read({ type: "response.in_progress", response: { status: "in_progress" } }), []);
  const first = read({
    type: "response.output_item.added",
    output_index: 0,
    item: { ...search, status: "in_progress" },
  });
  assert.equal(first.length, 1);
  assert.deepEqual(
    first[0]!.native!.map((e) => e.event),
    ["response.created", "response.in_progress", "response.output_item.added"],
  );
  assert.equal(first[0]!.choices[0]!.delta.role, "assistant");
  const progress = read({ type: "response.web_search_call.searching", output_index: 0, item_id: "ws_1" });
  assert.deepEqual(progress[0]!.choices, [], "a carrier: no canonical content");
  assert.equal(progress[0]!.native![0]!.event, "response.web_search_call.searching");
  read({ type: "response.output_item.added", output_index: 1, item: { ...message(""), content: [] } });
  const text = read({ type: "response.output_text.delta", output_index: 1, delta: "Hi" });
  assert.equal(text[0]!.choices[0]!.delta.content, "Hi");
  const end: Chunk[] = read({ type: "response.completed", response: { status: "completed", usage } });
  assert.equal(state.done, true);
  assert.equal(end[0]!.choices[0]!.finish_reason, "stop");
  assert.deepEqual(end.at(-1)!.usage, {
    prompt: 120,
    completion: 30,
    cachedInput: 20,
    cacheWrite: 0,
    reasoning: 10,
  });
  assert.equal(end.at(-1)!.native![0]!.event, "response.completed");
});

test("stream: a failed Response or an error event is an upstream failure", () => {
  const state = new ResponsesStreamState();
  assert.throws(
    () =>
      state.read("response.failed", {
        type: "response.failed",
        response: { error: { message: "search failed" } },
      }),
    (err: unknown) => err instanceof UpstreamError && /search failed/.test(err.message),
  );
  assert.throws(
    () => new ResponsesStreamState().read("error", { type: "error", message: "boom" }),
    UpstreamError,
  );
});

test("the prompt bound covers the native body of a Responses call, the canonical request otherwise", () => {
  const request = { model: "m", messages: [{ role: "user" as const, content: "hi" }] };
  const o = DEFAULT_PROMPT_OVERHEADS;
  const big = "x".repeat(5000);
  const body = {
    model: "m",
    input: [
      { role: "user", content: "hi" },
      { ...search, action: { type: "search", query: big } },
    ],
    tools: [{ type: "web_search" }],
  };
  assert.ok(openaiPromptBound(request, o, native(body)) > 5000, "the earlier search's bytes are counted");
  assert.equal(openaiPromptBound(request, o), promptUpperBound(request, o));
  // any Responses body may go natively (responses_api), built-in tools or not
  assert.ok(openaiPromptBound(request, o, { ...native(body), builtinTools: [] }) > 5000);
  // chat completions: the fields the gateway does not know go on, and count
  const chat = {
    api: "chat.completions" as const,
    body: { ...request, documents: [{ text: big }] },
    headers: {},
    untranslated: [{ param: "documents", name: "documents" }],
  };
  assert.ok(openaiPromptBound(request, o, chat) >= promptUpperBound(request, o) + 5000);
});
