// Content safety as coding agents meet it, with the rules reviewer, on an Anthropic upstream
// (native) and an OpenAI-compatible one (translated):
// - a streamed Messages or Responses request is a reviewed stream unless the operator chose
//   JSON: Claude Code drops a JSON answer to its stream and sends the turn again without
//   `stream`, so one turn was two upstream calls, both charged;
// - a withheld answer reads as this gateway's content policy, with the request id, as an
//   ordinary end of turn (Claude Code words `stop_reason: refusal` as Anthropic's usage policy)
//   and as a completed Response (Codex sends an incomplete one again: 469 times in two minutes);
// - a key whose answers are withheld again and again is refused with 429 and
//   `x-should-retry: false`, which the SDKs do not retry;
// - a withheld or broken stream is charged the prompt the upstream reported in its
//   message_start, not the gateway's estimate, whenever it reported one.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type Anthropic from "@anthropic-ai/sdk";
import { RateLimitError as AnthropicRateLimitError } from "@anthropic-ai/sdk";
import type { BetaMessage } from "@anthropic-ai/sdk/resources/beta/messages";
import OpenAI, { RateLimitError } from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { withheldNotice } from "../src/safety/withheld.ts";
import { type MessagesGateway, startMessagesGateway, UPSTREAMS } from "./support/messages-gateway.ts";
import { countWords } from "./support/mock-provider.ts";
import { until } from "./support/stream-assertions.ts";

/** the 7th of the mocks' reply words: an answer of 12 words is flagged part way through */
const LATE_WORD = "from";
/** how many withheld answers one key may get within the window in this suite */
const WITHHELD_MAX = 3;
/** Claude Code's request, as in test/sessions/claude-code.json, trimmed to what matters here */
const CLAUDE_CODE = {
  max_tokens: 32000,
  system: [{ type: "text" as const, text: "You are Claude Code, Anthropic's official CLI for Claude." }],
  tools: [
    {
      name: "Bash",
      description: "Runs a shell command.",
      input_schema: { type: "object" as const, properties: { command: { type: "string" } } },
    },
  ],
};

let env: MessagesGateway;
/** POST /v1/messages and /v1/responses requests the gateway received */
const received = { messages: 0, responses: 0 };
let keys = 0;

before(async () => {
  const models = [...UPSTREAMS.map((u) => u.model), "demo"];
  env = await startMessagesGateway({
    config: {
      plans: [
        { id: "default", quota_tokens: 1_000_000_000, models },
        // what the gateway did for every stream before: the spec's JSON answer, chosen explicitly
        { id: "json", quota_tokens: 1_000_000_000, models, safety: { streaming: "json" as const } },
        { id: "open", quota_tokens: 1_000_000_000, models, safety: { enabled: false } },
      ],
      // on globally, the streaming mode left to the gateway
      safety: {
        enabled: true,
        segment_tokens: 4,
        withheld_limit: { max: WITHHELD_MAX, window_ms: 60_000 },
        reviewers: [{ type: "rules" as const, terms: [LATE_WORD], category: "blocked_terms" }],
      },
    },
  });
  env.gw.gateway.app.server.on("request", (req: { url?: string }) => {
    if (req.url === "/v1/messages") received.messages++;
    if (req.url === "/v1/responses") received.responses++;
  });
});

after(async () => {
  await env?.close();
});

/** A key of an account of its own (the withheld answers are counted per key). */
async function newKey(plan = "default"): Promise<{ id: string; secret: string }> {
  return env.gw.key(await env.gw.account(`withheld-${++keys}`, { plan }));
}

/**
 * One turn as Claude Code plays it: the request streamed through the SDK's beta Messages API;
 * an answer that is no stream is dropped and the turn sent again without `stream` (what
 * Claude Code does when its stream fails).
 */
async function claudeCodeTurn(
  client: Anthropic,
  model: string,
  prompt: string,
): Promise<{ message: BetaMessage; requestIds: string[] }> {
  const params = {
    model,
    ...CLAUDE_CODE,
    messages: [{ role: "user" as const, content: prompt }],
    betas: ["claude-code-20250219"],
  };
  const stream = client.beta.messages.stream(params);
  try {
    const message = await stream.finalMessage();
    return { message, requestIds: [stream.request_id!] };
  } catch {
    const { data, request_id } = await client.beta.messages.create(params).withResponse();
    return { message: data, requestIds: [stream.request_id!, request_id!] };
  }
}

/** The text of a message's text blocks. */
const textOf = (message: BetaMessage) =>
  message.content.map((b) => (b.type === "text" ? b.text : "")).join("");

for (const { kind, model, label } of UPSTREAMS.filter((u) => u.kind !== "gemini")) {
  describe(label, () => {
    test("one Claude Code turn with safety on is one upstream call and one charge", async () => {
      const key = await newKey();
      const mock = env.mockOf(model);
      const before = mock.requests.length;
      const { message, requestIds } = await claudeCodeTurn(
        env.anthropic(key.secret),
        model,
        "Say hello. mock:tokens=5",
      );
      assert.equal(textOf(message), "Hello world this is a");
      assert.equal(requestIds.length, 1, "the stream was read: no second request");
      assert.equal(mock.requests.length - before, 1, "one upstream call");
      const recorded = await env.gw.recorded("key_id", key.id);
      assert.equal(recorded.calls, 1, "one record");
      const u = message.usage;
      const charged =
        u.input_tokens +
        (u.cache_creation_input_tokens ?? 0) +
        (u.cache_read_input_tokens ?? 0) +
        u.output_tokens;
      assert.equal(recorded.tokens, charged, "one charge, as the usage says");
      const row = await env.gw.record(requestIds[0]!);
      assert.equal(row.safety_mode, "reviewed");
      assert.equal(row.safety_verdict, "pass");
    });

    test("with JSON chosen by the operator, the same turn costs two upstream calls and two charges", async () => {
      // why JSON is no longer the default for the agent APIs
      const key = await newKey("json");
      const mock = env.mockOf(model);
      const before = mock.requests.length;
      const { requestIds } = await claudeCodeTurn(
        env.anthropic(key.secret),
        model,
        "Say hello. mock:tokens=5",
      );
      assert.equal(requestIds.length, 2);
      assert.equal(mock.requests.length - before, 2);
      assert.equal((await env.gw.recorded("key_id", key.id)).calls, 2);
    });

    test("a withheld Claude Code turn ends as an ordinary turn whose text is the gateway's notice with the request id", async () => {
      const key = await newKey();
      const { message, requestIds } = await claudeCodeTurn(
        env.anthropic(key.secret),
        model,
        "Tell me more. mock:tokens=12",
      );
      assert.equal(requestIds.length, 1);
      assert.equal(
        message.stop_reason,
        "end_turn",
        "not refusal: Claude Code blames Anthropic's usage policy for it",
      );
      const text = textOf(message);
      assert.ok(text.endsWith(withheldNotice(requestIds[0]!)), text);
      assert.match(text, /This gateway's content policy withheld this answer \(request req_\w+\)/);
      assert.equal(text.includes(LATE_WORD), false, "nothing flagged was sent");
      assert.doesNotMatch(text, /usage policy|anthropic\.com/i);
      const row = await env.gw.record(requestIds[0]!);
      assert.equal(row.status, "content_filter");
      assert.equal(row.safety_verdict, "flagged");
    });

    test("a withheld stream is charged the prompt the upstream reported, not the gateway's estimate", async () => {
      // long words: the mock counts one token a word, the gateway's tokenizer many more
      const prompt = `${"Antidisestablishmentarianism ".repeat(40)}mock:tokens=12`;
      const key = await newKey();
      const client = env.anthropic(key.secret);
      const { requestIds } = await claudeCodeTurn(client, model, prompt);
      const row = await env.gw.record(requestIds[0]!);
      assert.equal(row.status, "content_filter");
      const estimate = (
        await client.messages.countTokens({
          model,
          ...CLAUDE_CODE,
          messages: [{ role: "user", content: prompt }],
        })
      ).input_tokens;
      // what the upstream counts for this prompt: the same turn answered whole, without safety
      const whole = await claudeCodeTurn(env.anthropic((await newKey("open")).secret), model, prompt);
      const upstream = whole.message.usage.input_tokens;
      if (kind === "anthropic") {
        // message_start said `upstream`; the stream was stopped long before message_delta
        assert.equal(
          Number(row.prompt_tokens),
          upstream,
          `charged ${row.prompt_tokens}, estimate ${estimate}`,
        );
        assert.equal(row.usage_source, "upstream");
        assert.ok(estimate > 2 * upstream, "the estimate would have been far off");
      } else {
        // an OpenAI-compatible stream reports usage only at its end: the estimate, as before
        assert.equal(row.usage_source, "estimated");
      }
      assert.ok(Number(row.completion_tokens) >= 6, "what the upstream produced is charged");
    });
  });
}

test("a translated stream from the Anthropic upstream (chat completions) is charged its message_start prompt when cut", async () => {
  // The Anthropic adapter hands message_start's figures on with its first chunk
  // (Chunk.usageSoFar) for every client API, not only for a native Messages stream.
  const key = await newKey("open");
  const prompt = `${"Antidisestablishmentarianism ".repeat(40)}mock:tokens=40 mock:drop-after=3`;
  const res = await fetch(`${env.gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "claude", stream: true, messages: [{ role: "user", content: prompt }] }),
  });
  const text = await res.text();
  assert.match(text, /upstream_error/, "the stream broke after it began");
  const row = await env.gw.record(res.headers.get("x-request-id")!);
  assert.equal(row.status, "upstream_error");
  assert.equal(Number(row.prompt_tokens), countWords(prompt), "the upstream's prompt, not an estimate");
  assert.equal(row.usage_source, "upstream");
  assert.ok(Number(row.completion_tokens) >= 3);
});

test("a Codex-like client takes a withheld Response as the end of the turn: one request, completed, the notice with the request id", async () => {
  const key = await newKey();
  const client = new OpenAI({ apiKey: key.secret, baseURL: env.gw.baseURL, maxRetries: 0 });
  const before = received.responses;
  const upstreamBefore = env.mocks.openai.requests.length;
  // Codex sends the turn again when the stream does not end in response.completed
  let final: ResponseStreamEvent | undefined;
  let requestId = "";
  for (let attempt = 0; attempt < 5 && final?.type !== "response.completed"; attempt++) {
    const { data, response } = await client.responses
      .create({ model: "gpt-test", input: "Tell me more. mock:tokens=12", stream: true, store: false })
      .withResponse();
    requestId = response.headers.get("x-request-id")!;
    for await (const event of data) final = event;
  }
  assert.equal(received.responses - before, 1, "not sent again");
  assert.equal(env.mocks.openai.requests.length - upstreamBefore, 1);
  assert.equal(final?.type, "response.completed");
  const response = (final as { response: OpenAI.Responses.Response }).response;
  assert.equal(response.status, "completed");
  const notice = response.output.at(-1) as OpenAI.Responses.ResponseOutputMessage;
  assert.deepEqual(
    notice.content.map((c) => (c.type === "output_text" ? c.text : "")),
    [withheldNotice(requestId)],
  );
});

test("a chat completion withheld names the gateway's policy and the request too", async () => {
  const key = await newKey();
  const res = await fetch(`${env.gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-test",
      messages: [{ role: "user", content: "More. mock:tokens=12" }],
    }),
  });
  const body = (await res.json()) as any;
  assert.equal(body.choices[0].finish_reason, "content_filter", "chat completions keep their finish reason");
  assert.equal(body.choices[0].message.content, withheldNotice(res.headers.get("x-request-id")!));
});

describe("a key whose answers are withheld again and again", () => {
  test(`after ${WITHHELD_MAX} withheld answers its calls get 429 with x-should-retry: false, which the SDKs do not retry`, async () => {
    const key = await newKey();
    const other = await newKey();
    for (let i = 0; i < WITHHELD_MAX; i++) {
      const { message } = await claudeCodeTurn(env.anthropic(key.secret), "claude", "More. mock:tokens=12");
      assert.equal(message.stop_reason, "end_turn");
    }
    const upstream = env.mocks.anthropic.requests.length;
    const messagesBefore = received.messages;
    // the SDK's default retries: a 429 it would retry, but for x-should-retry
    const anthropic = env.anthropic(key.secret, { maxRetries: 2 });
    const err = await anthropic.messages
      .create({
        model: "claude",
        max_tokens: 50,
        messages: [{ role: "user", content: "Hello mock:tokens=2" }],
      })
      .then(
        () => assert.fail("the key should be refused"),
        (e: unknown) => e,
      );
    assert.ok(err instanceof AnthropicRateLimitError);
    assert.equal(err.headers?.get("x-should-retry"), "false");
    assert.ok(Number(err.headers?.get("retry-after")) > 0, "and when it would pass again");
    assert.equal((err.error as any).error.type, "rate_limit_error");
    assert.equal((err.error as any).error.details.error_code, "withheld_repeats");
    assert.match((err.error as any).error.message, /withheld by the gateway's content policy 3 times/);
    assert.equal(received.messages - messagesBefore, 1, "not retried");
    assert.equal(env.mocks.anthropic.requests.length, upstream, "nothing went upstream");

    const responsesBefore = received.responses;
    const openai = new OpenAI({ apiKey: key.secret, baseURL: env.gw.baseURL, maxRetries: 2 });
    const refused = await openai.responses.create({ model: "claude", input: "Hello" }).then(
      () => assert.fail("the key should be refused on every API"),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof RateLimitError);
    assert.equal(refused.code, "withheld_repeats");
    assert.equal(received.responses - responsesBefore, 1, "not retried");

    // the key's record says why; another key of the same gateway is served
    const refusals = () =>
      env.gw.gateway.deps.store.db
        .selectFrom("call_records")
        .selectAll()
        .where("key_id", "=", key.id)
        .where("error_code", "=", "withheld_repeats")
        .execute();
    await until(async () => (await refusals()).length === 2, "the refusals to be recorded");
    assert.deepEqual(
      (await refusals()).map((r) => Number(r.http_status)),
      [429, 429],
    );
    const { message } = await claudeCodeTurn(env.anthropic(other.secret), "claude", "Hello mock:tokens=2");
    assert.equal(textOf(message), "Hello world");
  });
});
