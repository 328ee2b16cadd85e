// POST /v1/messages and /v1/messages/count_tokens with @anthropic-ai/sdk as the client, against
// each kind of upstream: the OpenAI-compatible mock and the Gemini mock (translated through
// the canonical request) and the Anthropic mock (native). Answers, streams (the SDK's helper
// and the raw events), tools with their results sent back, thinking with signatures, images,
// token counts, every error as the SDK's typed error, what each upstream received, the
// records, and the charge: the same tokens as through chat completions.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Anthropic, {
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
} from "@anthropic-ai/sdk";
import type { MessageParam, Tool } from "@anthropic-ai/sdk/resources/messages";
import { updateKey } from "../src/accounts/keys.ts";
import { canonicalRequest, messagesRequestSchema } from "../src/apis/messages/request.ts";
import { localPromptTokens } from "../src/providers/prompt-bound.ts";
import type { CallRecordsTable } from "../src/store/schema.ts";
import {
  FAILOVER,
  failing,
  type MessagesGateway,
  startMessagesGateway,
  UPSTREAMS,
} from "./support/messages-gateway.ts";
import { thinkingSignature } from "./support/mock-anthropic-upstream.ts";
import { MOCK_REASONING } from "./support/mock-openai-upstream.ts";
import { parseNamedStream } from "./support/stream-assertions.ts";

const weather: Tool = {
  name: "get_weather",
  description: "Current weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
/** 1x1 transparent PNG */
const PNG_DATA =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
/** the words the mocks answer with, one token each */
const REPLY = (n: number) =>
  "Hello world this is a mock reply from the model with some simple words for testing"
    .split(" ")
    .slice(0, n)
    .join(" ");

let env: MessagesGateway;
let client: Anthropic;
let key: { id: string; secret: string };
let accountId: string;

before(async () => {
  env = await startMessagesGateway();
  accountId = await env.gw.account("messages");
  key = await env.gw.key(accountId);
  client = env.anthropic(key.secret);
});

after(async () => {
  await env?.close();
});

async function record(requestId: string | null | undefined): Promise<CallRecordsTable> {
  assert.ok(requestId, "the answer carries its request id");
  return env.gw.record(requestId);
}

/** The body the mock behind `model` received last. */
function lastBody(model: string): any {
  const requests = env.mockOf(model).requests;
  assert.ok(requests.length, "the upstream was called");
  return requests.at(-1)!.body;
}

/** Awaits a call that must fail; the SDK's error. */
async function refused(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof APIError, `expected an APIError, got ${String(err)}`);
    return err;
  }
  assert.fail("the call succeeded; it should have been refused");
}

/** A raw POST to the gateway, for what the SDK hides (event framing, pings, headers). */
function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${env.gw.origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key.secret, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

for (const { kind, model, label } of UPSTREAMS) {
  describe(label, () => {
    test("messages.create: Anthropic's message, our id and public model, usage as charged; the record says messages", async () => {
      const { data, response, request_id } = await client.messages
        .create({
          model,
          max_tokens: 100,
          system: "You are terse.",
          messages: [{ role: "user", content: "Say hello mock:tokens=5" }],
        })
        .withResponse();
      assert.equal(data.type, "message");
      assert.equal(data.role, "assistant");
      assert.equal(data.model, model);
      assert.match(data.id, /^msg_[A-Za-z0-9]+$/);
      assert.deepEqual(
        data.content.map((b) => b.type),
        ["text"],
      );
      assert.equal((data.content[0] as { text: string }).text, REPLY(5));
      assert.equal(data.stop_reason, "end_turn");
      const rid = response.headers.get("x-request-id");
      assert.equal(response.headers.get("request-id"), rid, "the SDK reads request-id");
      assert.equal(request_id, rid);
      const row = await record(rid);
      assert.equal(row.api, "messages");
      assert.equal(row.status, "ok");
      assert.equal(row.public_model, model);
      assert.equal(Number(row.stream), 0);
      assert.equal(row.usage_source, "upstream");
      assert.equal(data.usage.input_tokens, 6, "the words of the system prompt and the message");
      assert.equal(data.usage.output_tokens, 5);
      assert.equal(data.usage.cache_read_input_tokens, 0);
      assert.equal(data.usage.cache_creation_input_tokens, 0);
      assert.equal(Number(row.prompt_tokens), 6);
      assert.equal(Number(row.completion_tokens), 5);
      assert.equal(Number(row.total_tokens), 11);
      assert.deepEqual(JSON.parse(row.params!), { max_tokens: 100 });
    });

    test("charged exactly as the same tokens through chat completions, and the counters agree", async () => {
      const acc = await env.gw.account(`same-charge-${kind}`);
      const k = await env.gw.key(acc);
      const messages = await env
        .anthropic(k.secret)
        .messages.create({
          model,
          max_tokens: 50,
          system: "Be brief.",
          messages: [{ role: "user", content: "Count to three mock:tokens=7" }],
        })
        .withResponse();
      const chat = await env
        .openai(k.secret)
        .chat.completions.create({
          model,
          max_tokens: 50,
          messages: [
            { role: "system", content: "Be brief." },
            { role: "user", content: "Count to three mock:tokens=7" },
          ],
        })
        .withResponse();
      const viaMessages = await record(messages.response.headers.get("x-request-id"));
      const viaChat = await record(chat.response.headers.get("x-request-id"));
      assert.equal(viaMessages.api, "messages");
      assert.equal(viaChat.api, "chat.completions");
      for (const field of ["prompt_tokens", "completion_tokens", "total_tokens"] as const)
        assert.equal(Number(viaMessages[field]), Number(viaChat[field]), field);
      assert.equal(chat.data.usage!.prompt_tokens, messages.data.usage.input_tokens);
      const recorded = await env.gw.recorded("key_id", k.id);
      assert.equal(recorded.calls, 2);
      assert.equal((await env.gw.ledger("key", k.id))?.used, recorded.tokens);
    });

    test("stream: the SDK's helper builds the message; the raw events follow Anthropic's sequence with cumulative usage", async () => {
      const stream = client.messages.stream({
        model,
        max_tokens: 100,
        messages: [{ role: "user", content: "Stream please mock:tokens=4" }],
      });
      let text = "";
      stream.on("text", (delta) => {
        text += delta;
      });
      const final = await stream.finalMessage();
      assert.equal(text, REPLY(4));
      assert.equal((final.content[0] as { text: string }).text, REPLY(4));
      assert.equal(final.stop_reason, "end_turn");
      assert.equal(final.usage.input_tokens, 3);
      assert.equal(final.usage.output_tokens, 4);
      assert.equal(final.model, model);

      const res = await post("/v1/messages", {
        model,
        max_tokens: 100,
        stream: true,
        messages: [{ role: "user", content: "Stream raw mock:tokens=4" }],
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
      const events = parseNamedStream(await res.text());
      const types = events.map((e) => e.event);
      assert.equal(types[0], "message_start");
      assert.ok(types.includes("ping"));
      assert.match(
        types.filter((t) => t !== "ping").join(" "),
        /^message_start( content_block_start( content_block_delta)+ content_block_stop)+ message_delta message_stop$/,
      );
      const start = events[0]!.data.message;
      assert.equal(start.model, model);
      assert.match(start.id, /^msg_/);
      assert.deepEqual(start.content, []);
      const delta = events.find((e) => e.event === "message_delta")!.data;
      assert.equal(delta.delta.stop_reason, "end_turn");
      assert.equal(delta.usage.output_tokens, 4);
      const row = await record(res.headers.get("x-request-id"));
      assert.equal(row.api, "messages");
      assert.equal(Number(row.stream), 1);
      assert.equal(Number(row.completion_tokens), 4);
      if (kind !== "anthropic") {
        // translated: the upstream's figures arrive at the end, in message_delta, cumulative
        assert.equal(delta.usage.input_tokens, Number(row.prompt_tokens));
        assert.equal(delta.usage.cache_read_input_tokens, 0);
      } else assert.equal(start.usage.input_tokens, Number(row.prompt_tokens));
    });

    test("tools: a tool_use (JSON and streamed with input_json_delta), then the tool_result sent back answers", async () => {
      const ask: MessageParam = { role: "user", content: "Weather in Paris? mock:tool" };
      const first = await client.messages.create({
        model,
        max_tokens: 200,
        tools: [weather],
        messages: [ask],
      });
      assert.equal(first.stop_reason, "tool_use");
      const use = first.content.find((b) => b.type === "tool_use")!;
      assert.ok(use && use.type === "tool_use");
      assert.equal(use.name, "get_weather");
      assert.deepEqual(use.input, { city: "Paris" });
      assert.ok(use.id);

      const res = await post("/v1/messages", {
        model,
        max_tokens: 200,
        stream: true,
        tools: [weather],
        messages: [ask],
      });
      const events = parseNamedStream(await res.text());
      const toolStart = events.find(
        (e) => e.event === "content_block_start" && e.data.content_block.type === "tool_use",
      );
      assert.ok(toolStart, "a tool_use block starts");
      assert.equal(toolStart.data.content_block.name, "get_weather");
      const json = events
        .filter((e) => e.event === "content_block_delta" && e.data.index === toolStart.data.index)
        .map((e) => {
          assert.equal(e.data.delta.type, "input_json_delta");
          return e.data.delta.partial_json;
        })
        .join("");
      assert.deepEqual(JSON.parse(json), { city: "Paris" });
      assert.equal(events.find((e) => e.event === "message_delta")!.data.delta.stop_reason, "tool_use");

      const streamed = await client.messages
        .stream({ model, max_tokens: 200, tools: [weather], messages: [ask] })
        .finalMessage();
      const streamedUse = streamed.content.find((b) => b.type === "tool_use");
      assert.deepEqual(streamedUse && streamedUse.type === "tool_use" && streamedUse.input, {
        city: "Paris",
      });

      // the result, and a word of the user's beside it (the mocks take directives from it)
      const result: MessageParam = {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: use.id, content: "Sunny, 21 C" },
          { type: "text", text: "Thanks mock:tokens=3" },
        ],
      };
      const answer = await client.messages.create({
        model,
        max_tokens: 200,
        tools: [weather],
        messages: [ask, { role: "assistant", content: first.content }, result],
      });
      assert.equal(answer.stop_reason, "end_turn");
      assert.equal((answer.content[0] as { text: string }).text, REPLY(3));
      const sent = lastBody(model);
      if (kind === "anthropic") {
        assert.deepEqual(sent.messages[2], result);
        assert.deepEqual(sent.messages[1].content, first.content);
        assert.deepEqual(sent.tools, [weather]);
      } else if (kind === "openai") {
        assert.deepEqual(sent.messages.slice(-2), [
          { role: "tool", tool_call_id: use.id, content: "Sunny, 21 C" },
          { role: "user", content: "Thanks mock:tokens=3" },
        ]);
        assert.equal(sent.messages.at(-3).tool_calls[0].id, use.id);
        assert.deepEqual(JSON.parse(sent.messages.at(-3).tool_calls[0].function.arguments), {
          city: "Paris",
        });
        assert.equal(sent.tools[0].function.name, "get_weather");
      } else {
        const parts = sent.contents.at(-1).parts;
        assert.equal(parts[0].functionResponse.name, "get_weather");
        assert.equal(parts.at(-1).text, "Thanks mock:tokens=3");
      }
    });

    test("images: a base64 image reaches the upstream in its own form", async () => {
      const answer = await client.messages.create({
        model,
        max_tokens: 50,
        messages: [
          {
            role: "user",
            content: [
              { type: "image", source: { type: "base64", media_type: "image/png", data: PNG_DATA } },
              { type: "text", text: "What is this? mock:tokens=2" },
            ],
          },
        ],
      });
      assert.equal((answer.content[0] as { text: string }).text, REPLY(2));
      const sent = lastBody(model);
      if (kind === "anthropic")
        assert.deepEqual(sent.messages[0].content[0], {
          type: "image",
          source: { type: "base64", media_type: "image/png", data: PNG_DATA },
        });
      else if (kind === "openai")
        assert.deepEqual(sent.messages[0].content[0], {
          type: "image_url",
          image_url: { url: `data:image/png;base64,${PNG_DATA}` },
        });
      else
        assert.deepEqual(sent.contents[0].parts[0], {
          inlineData: { mimeType: "image/png", data: PNG_DATA },
        });
    });

    test("thinking: what each upstream reports of it, with Anthropic's signatures round-tripped unchanged", async () => {
      if (kind === "anthropic") {
        const ask: MessageParam = { role: "user", content: "Weather? mock:tool" };
        const thinking = { type: "enabled" as const, budget_tokens: 1024 };
        const first = await client.messages.create({
          model,
          max_tokens: 2000,
          thinking,
          tools: [weather],
          messages: [ask],
        });
        const block = first.content[0]!;
        assert.equal(block.type, "thinking");
        assert.equal(block.type === "thinking" && block.signature, thinkingSignature(block.thinking));
        assert.deepEqual(lastBody(model).thinking, thinking);
        // the streamed thinking arrives in deltas and its signature in signature_delta
        const streamed = await client.messages
          .stream({ model, max_tokens: 2000, thinking, tools: [weather], messages: [ask] })
          .finalMessage();
        const sBlock = streamed.content[0]!;
        assert.ok(sBlock.type === "thinking");
        assert.equal(sBlock.signature, thinkingSignature(sBlock.thinking));
        // the tool loop goes on with the signed block sent back: the mock checks the signature
        const use = streamed.content.find((b) => b.type === "tool_use")!;
        assert.ok(use.type === "tool_use");
        const next = await client.messages.create({
          model,
          max_tokens: 2000,
          thinking,
          tools: [weather],
          messages: [
            ask,
            { role: "assistant", content: streamed.content },
            {
              role: "user",
              content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny mock:tokens=2" }],
            },
          ],
        });
        assert.equal(next.stop_reason, "end_turn");
        assert.deepEqual(lastBody(model).messages[1].content[0], {
          type: "thinking",
          thinking: sBlock.thinking,
          signature: sBlock.signature,
        });
        // a signature changed on the way is the upstream's 400, passed on as Anthropic's
        const tampered = await refused(
          client.messages.create({
            model,
            max_tokens: 2000,
            thinking,
            tools: [weather],
            messages: [
              ask,
              {
                role: "assistant",
                content: [{ ...sBlock, signature: `${sBlock.signature.slice(0, -2)}AA` }, use],
              },
              { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny" }] },
            ],
          }),
        );
        assert.ok(tampered instanceof BadRequestError);
        assert.match(tampered.message, /signature/);
        // redacted thinking passes through both ways
        const redacted = await client.messages.create({
          model,
          max_tokens: 2000,
          thinking,
          messages: [{ role: "user", content: "Think hard mock:redacted mock:tokens=2" }],
        });
        assert.deepEqual(
          redacted.content.map((b) => b.type),
          ["redacted_thinking", "thinking", "text"],
        );
      } else if (kind === "openai") {
        const answer = await client.messages.create({
          model,
          max_tokens: 8000,
          thinking: { type: "enabled", budget_tokens: 1024 },
          messages: [{ role: "user", content: "Think mock:reasoning mock:tokens=2" }],
        });
        assert.deepEqual(answer.content[0], { type: "thinking", thinking: MOCK_REASONING, signature: "" });
        assert.equal(
          lastBody(model).reasoning_effort,
          "low",
          "a budget of an eighth of max_tokens is the low effort",
        );
        assert.equal(answer.usage.output_tokens, 2 + 3, "reasoning is output, charged");
        const streamed = await client.messages
          .stream({
            model,
            max_tokens: 2000,
            messages: [{ role: "user", content: "Think mock:reasoning mock:tokens=2" }],
          })
          .finalMessage();
        assert.deepEqual(
          streamed.content.map((b) => b.type),
          ["thinking", "text"],
        );
        assert.equal((streamed.content[0] as { thinking: string }).thinking, MOCK_REASONING);
        // sent back, the thinking stays here: a chat completions upstream has no place for it
        await client.messages.create({
          model,
          max_tokens: 100,
          messages: [
            { role: "user", content: "Think" },
            { role: "assistant", content: answer.content },
            { role: "user", content: "Go on mock:tokens=1" },
          ],
        });
        assert.deepEqual(lastBody(model).messages[1], { role: "assistant", content: REPLY(2) });
      } else {
        const answer = await client.messages.create({
          model,
          max_tokens: 4000,
          thinking: { type: "enabled", budget_tokens: 3000 },
          messages: [{ role: "user", content: "Think mock:tokens=2 mock:thinking=9" }],
        });
        assert.deepEqual(
          answer.content.map((b) => b.type),
          ["text"],
          "Gemini's thoughts are not asked for, so none come back",
        );
        assert.equal(answer.usage.output_tokens, 2 + 9, "thinking is output, charged");
        assert.ok(lastBody(model).generationConfig.thinkingConfig.thinkingBudget > 0);
      }
    });

    test("count_tokens: the gateway's own count of the canonical request; nothing sent upstream, nothing recorded", async () => {
      const body = {
        model,
        system: "You are terse.",
        tools: [weather],
        messages: [{ role: "user" as const, content: "How many tokens is this sentence?" }],
      };
      const before = env.mockOf(model).requests.length;
      const calls = (await env.gw.recorded("key_id", key.id)).calls;
      const counted = await client.messages.countTokens(body);
      const canonical = canonicalRequest(messagesRequestSchema.parse({ ...body, max_tokens: 1 })).request;
      assert.deepEqual(counted, { input_tokens: localPromptTokens(canonical) });
      assert.ok(counted.input_tokens > 10);
      assert.equal(env.mockOf(model).requests.length, before);
      assert.equal((await env.gw.recorded("key_id", key.id)).calls, calls);
      const longer = await client.messages.countTokens({
        ...body,
        messages: [{ role: "user", content: "How many tokens is this sentence, and this one, and this?" }],
      });
      assert.ok(longer.input_tokens > counted.input_tokens);
    });

    test("upstream failures as Anthropic's errors: every attempt rate-limited is 529 overloaded_error, a 500 is api_error, mid-stream an error event", async () => {
      const target = failing(model);
      const status = kind === "anthropic" ? 529 : 429;
      const overloaded = await refused(
        client.messages.create({
          model: target,
          max_tokens: 50,
          messages: [{ role: "user", content: `x mock:status=${status}` }],
        }),
      );
      assert.ok(overloaded instanceof InternalServerError);
      assert.equal(overloaded.status, 529);
      assert.equal(overloaded.constructor.name, "OverloadedError");
      assert.equal(overloaded.type, "overloaded_error");
      assert.equal(overloaded.errorCode, "upstream_rate_limited");
      assert.ok(overloaded.headers?.get("retry-after"));
      assert.equal(Number((await record(overloaded.requestID)).http_status), 529, "recorded as answered");
      const server = await refused(
        client.messages.create({
          model: target,
          max_tokens: 50,
          messages: [{ role: "user", content: "x mock:status=500" }],
        }),
      );
      assert.ok(server instanceof InternalServerError);
      assert.equal(server.status, 502);
      assert.equal(server.type, "api_error");
      const row = await record(server.requestID);
      assert.equal(row.api, "messages");
      assert.equal(row.error_code, "upstream_error");

      // the OpenAI-compatible mock breaks off its stream instead of reporting an error in it
      const fault = kind === "openai" ? "mock:drop-after=3" : "mock:error-after=3";
      const stream = await client.messages.create({
        model,
        max_tokens: 50,
        stream: true,
        messages: [{ role: "user", content: `x mock:tokens=8 ${fault}` }],
      });
      let text = "";
      const midway = await refused(
        (async () => {
          for await (const event of stream)
            if (event.type === "content_block_delta" && event.delta.type === "text_delta")
              text += event.delta.text;
        })(),
      );
      assert.equal(midway.type, "api_error");
      assert.equal(text, REPLY(3));
    });
  });
}

describe("refusals as the SDK's typed errors, each recorded as a messages call", () => {
  const ask = { model: "claude", max_tokens: 10, messages: [{ role: "user" as const, content: "hi" }] };

  async function expectRefusal(
    call: Promise<unknown>,
    expected: { cls: new (...args: any[]) => APIError; status: number; type: string; code: string },
  ): Promise<APIError> {
    const err = await refused(call);
    assert.ok(err instanceof expected.cls, `expected ${expected.cls.name}, got ${err.constructor.name}`);
    assert.equal(err.status, expected.status);
    assert.equal(err.type, expected.type);
    assert.equal(err.errorCode, expected.code);
    assert.deepEqual(Object.keys(err.error as object).sort(), ["error", "type"]);
    const row = await record(err.requestID);
    assert.equal(row.api, "messages");
    assert.equal(row.status, "error");
    assert.equal(Number(row.http_status), expected.status);
    assert.equal(row.error_code, expected.code);
    return err;
  }

  test("authentication_error: no key, an unknown key in x-api-key or as a Bearer token", async () => {
    // the SDK will not send a request without a key: a raw one
    const res = await post("/v1/messages", ask, { "x-api-key": "" });
    assert.equal(res.status, 401);
    const body = await res.json();
    assert.deepEqual(body, {
      type: "error",
      error: {
        type: "authentication_error",
        message:
          "No API key provided. Send it as the header 'x-api-key: sk-...' or 'Authorization: Bearer sk-...'.",
        details: { error_code: "missing_api_key" },
      },
    });
    assert.equal((await record(res.headers.get("request-id"))).api, "messages");
    await expectRefusal(env.anthropic("sk-unknown0123456789").messages.create(ask), {
      cls: AuthenticationError,
      status: 401,
      type: "authentication_error",
      code: "invalid_api_key",
    });
    await expectRefusal(
      new Anthropic({
        apiKey: null,
        authToken: "sk-unknown0123456789",
        baseURL: env.gw.origin,
        maxRetries: 0,
      }).messages.create(ask),
      { cls: AuthenticationError, status: 401, type: "authentication_error", code: "invalid_api_key" },
    );
  });

  test("a Bearer token (ANTHROPIC_AUTH_TOKEN) is a key as good as x-api-key", async () => {
    const bearer = new Anthropic({
      apiKey: null,
      authToken: key.secret,
      baseURL: env.gw.origin,
      maxRetries: 0,
    });
    const answer = await bearer.messages.create({
      ...ask,
      messages: [{ role: "user", content: "hi mock:tokens=1" }],
    });
    assert.equal(answer.type, "message");
  });

  test("permission_error: a disabled key", async () => {
    const k = await env.gw.key(accountId);
    await updateKey(env.gw.gateway.deps.store.db, k.id, { disabled: true });
    env.gw.gateway.deps.keys.clear();
    await expectRefusal(env.anthropic(k.secret).messages.create(ask), {
      cls: PermissionDeniedError,
      status: 403,
      type: "permission_error",
      code: "key_disabled",
    });
  });

  test("not_found_error: a model the plan does not include", async () => {
    await expectRefusal(client.messages.create({ ...ask, model: "no-such-model" }), {
      cls: NotFoundError,
      status: 404,
      type: "not_found_error",
      code: "model_not_found",
    });
  });

  test("rate_limit_error: a key over its limit, x-should-retry false", async () => {
    const k = await env.gw.key(accountId, { limit: 5 });
    const err = await expectRefusal(env.anthropic(k.secret).messages.create(ask), {
      cls: RateLimitError,
      status: 429,
      type: "rate_limit_error",
      code: "key_limit_exceeded",
    });
    assert.equal(err.headers?.get("x-should-retry"), "false");
  });

  test("invalid_request_error: a missing max_tokens, a malformed block; an unknown field is the upstream's to judge", async () => {
    const missing = await expectRefusal(
      client.messages.create({ model: "claude", messages: ask.messages } as never),
      { cls: BadRequestError, status: 400, type: "invalid_request_error", code: "invalid_request" },
    );
    assert.equal(missing.apiMessage, "max_tokens: Field required");
    const block = await expectRefusal(
      client.messages.create({
        ...ask,
        messages: [{ role: "user", content: [{ type: "text" }] }],
      } as never),
      { cls: BadRequestError, status: 400, type: "invalid_request_error", code: "invalid_request" },
    );
    assert.equal(block.apiMessage, "messages.0.content.0.text: Field required");
    // A field the gateway does not know goes to the Anthropic upstream as it came (forward
    // compatibility): the upstream refuses it here, as Anthropic does, in its own words.
    const extra = await expectRefusal(client.messages.create({ ...ask, frequency_penalty: 1 } as never), {
      cls: BadRequestError,
      status: 400,
      type: "invalid_request_error",
      code: "upstream_bad_request",
    });
    assert.equal(extra.apiMessage, "frequency_penalty: Extra inputs are not permitted");
  });

  // Anthropic's SDK reads an error only from Anthropic's envelope: an unknown route under
  // /v1/messages (a wrong method, an endpoint the gateway does not serve) answers in it.
  test("not_found_error: an unknown method or path under /v1/messages, in Anthropic's envelope", async () => {
    for (const [method, path] of [
      ["PUT", "/v1/messages"],
      ["GET", "/v1/messages"],
      ["DELETE", "/v1/messages/count_tokens"],
      ["POST", "/v1/messages/batches"],
    ] as const) {
      const res = await fetch(`${env.gw.origin}${path}`, {
        method,
        headers: { "content-type": "application/json", "x-api-key": key.secret },
        ...(method === "GET" ? {} : { body: "{}" }),
      });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.ok(res.headers.get("request-id"), `${method} ${path}: the request id where the SDK reads it`);
      assert.deepEqual(await res.json(), {
        type: "error",
        error: {
          type: "not_found_error",
          message: `Unknown route: ${method} ${path}`,
          details: { error_code: "http_error" },
        },
      });
    }
    const err = await refused(client.messages.batches.retrieve("msgbatch_0123"));
    assert.ok(err instanceof NotFoundError, `expected NotFoundError, got ${err.constructor.name}`);
    assert.equal(err.type, "not_found_error");
    assert.equal(err.errorCode, "http_error");
    // a path that only begins like it is no route of the Messages API: OpenAI's envelope
    const other = await fetch(`${env.gw.origin}/v1/messagesx`, { method: "POST", body: "{}" });
    assert.equal(other.status, 404);
    assert.equal(((await other.json()) as { error: { code: string } }).error.code, "http_error");
  });
});

describe("routing", () => {
  test("each attempt goes the way its deployment speaks: a failed native attempt fails over to a translated one, and back", async () => {
    for (const [model, answered, provider] of [
      [FAILOVER.toTranslated, "openai", "oai"],
      [FAILOVER.toNative, "anthropic", "anth"],
    ] as const) {
      const mock = env.mocks[answered];
      const before = mock.requests.length;
      for (const stream of [false, true]) {
        const res = await post("/v1/messages", {
          model,
          max_tokens: 50,
          ...(stream ? { stream: true } : {}),
          messages: [{ role: "user", content: "Fail over mock:tokens=3" }],
        });
        assert.equal(res.status, 200);
        const text = stream
          ? parseNamedStream(await res.text())
              .filter((e) => e.event === "content_block_delta")
              .map((e) => e.data.delta.text)
              .join("")
          : ((await res.json()) as { content: { text: string }[] }).content[0]!.text;
        assert.equal(text, REPLY(3));
        const row = await record(res.headers.get("request-id"));
        assert.equal(row.provider, provider);
        assert.deepEqual(
          JSON.parse(row.attempts!).map((a: { outcome: string }) => a.outcome),
          ["network", "ok"],
        );
      }
      assert.equal(mock.requests.length, before + 2);
      // the streamed one: the Messages body itself, or the canonical request in OpenAI's words
      const body = mock.requests.at(-1)!.body;
      assert.deepEqual(body.messages, [{ role: "user", content: "Fail over mock:tokens=3" }]);
      if (answered === "anthropic") {
        assert.equal(body.model, "claude-sonnet-c");
        assert.equal("stream_options" in body, false);
      } else {
        assert.equal(body.model, "mock-model-c");
        assert.deepEqual(body.stream_options, { include_usage: true });
      }
    }
  });
});

describe("anthropic-beta flags", () => {
  test("the client's flags reach the upstream but those the provider denies, which are dropped with a notice", async () => {
    const res = await post(
      "/v1/messages",
      { model: "claude", max_tokens: 10, messages: [{ role: "user", content: "hi mock:tokens=1" }] },
      { "anthropic-beta": "interleaved-thinking-2025-05-14, oauth-2025-04-20,claude-code-20250219" },
    );
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(res.headers.get("x-gateway-dropped"), "anthropic-beta (oauth-2025-04-20)");
    const sent = env.mocks.anthropic.requests.at(-1)!;
    assert.equal(sent.headers["anthropic-beta"], "interleaved-thinking-2025-05-14,claude-code-20250219");
    assert.equal(sent.headers["anthropic-version"], "2023-06-01");
    assert.equal(
      sent.headers["x-api-key"],
      "sk-ant-test-0123456789",
      "the gateway's key, never the client's",
    );
    // context_management goes with its flag, and without it would be refused upstream: dropped
    await post(
      "/v1/messages",
      {
        model: "claude",
        max_tokens: 10,
        context_management: { edits: [] },
        messages: [{ role: "user", content: "hi mock:tokens=1" }],
      },
      { "anthropic-beta": "context-management-2025-06-27" },
    );
    assert.deepEqual(env.mocks.anthropic.requests.at(-1)!.body.context_management, { edits: [] });
    const without = await post("/v1/messages", {
      model: "claude",
      max_tokens: 10,
      context_management: { edits: [] },
      messages: [{ role: "user", content: "hi mock:tokens=1" }],
    });
    assert.equal(without.status, 200);
    assert.equal(without.headers.get("x-gateway-dropped"), "context_management");
    assert.equal("context_management" in env.mocks.anthropic.requests.at(-1)!.body, false);
  });

  // Claude Code drops a flag its gateway's upstream refuses and retries, when the refusal is
  // worded as its gateway contract says: the token `capability_rejected: beta_header:<flag>`.
  test("a flag the upstream refuses comes back as the capability token Claude Code recovers from", async () => {
    const res = await post(
      "/v1/messages",
      { model: "claude", max_tokens: 10, messages: [{ role: "user", content: "hi mock:tokens=1" }] },
      { "anthropic-beta": "claude-code-20250219,made-up-beta-2099-01-01" },
    );
    assert.equal(res.status, 400);
    const body = (await res.json()) as {
      error: { type: string; message: string; details: { reason: string } };
    };
    assert.equal(body.error.type, "invalid_request_error");
    assert.equal(body.error.message, "capability_rejected: beta_header:made-up-beta-2099-01-01");
    assert.match(body.error.details.reason, /made-up-beta-2099-01-01/);
  });
});

test("no key, the client's or the upstreams', reaches a log line or an upstream", async () => {
  // a call that logs (a failure inside the gateway's reach), with the key in both headers
  await post(
    "/v1/messages",
    { model: "claude-failing", max_tokens: 10, messages: [{ role: "user", content: "x mock:status=500" }] },
    {
      authorization: `Bearer ${key.secret}`,
    },
  );
  const logs = env.gw.logs.join("");
  assert.ok(logs.length > 0);
  for (const secret of [key.secret, "sk-ant-test-0123456789", "AIzaTest0123456789", "sk-upstream-secret-123"])
    assert.equal(logs.includes(secret), false, "a secret in the logs");
  for (const mock of Object.values(env.mocks))
    for (const r of mock.requests) assert.equal(JSON.stringify(r.headers).includes(key.secret), false);
});
