// Usage where each API's clients read it on a translated stream (a Messages or Responses client
// on an OpenAI-compatible upstream, which counts the prompt only at the end of its stream):
// Messages' message_start carries input tokens (LangChain's ChatAnthropic takes them from a
// stream's first event and reported input_tokens: 0), the gateway's own count until the
// upstream says more, and message_delta the upstream's final figures, which the SDK's final
// message takes; chat completions' usage chunk and Responses' response.completed carry the
// upstream's figures; every record keeps the upstream's.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages";
import { type MessagesGateway, startMessagesGateway } from "./support/messages-gateway.ts";
import { countWords } from "./support/mock-provider.ts";

let env: MessagesGateway;
let key: string;

before(async () => {
  env = await startMessagesGateway();
  key = (await env.gw.key(await env.gw.account("usage"))).secret;
});

after(async () => {
  await env?.close();
});

/** the prompt, and what the OpenAI mock counts for it: one token a word */
const PROMPT = "Describe the old harbour of Copenhagen, its ferries and warehouses. mock:tokens=5";
const UPSTREAM_PROMPT = countWords(PROMPT);

describe("a Messages stream on a translated upstream, through @anthropic-ai/sdk", () => {
  test("message_start carries the gateway's count of the prompt; the final usage and the record are the upstream's", async () => {
    const client = env.anthropic(key);
    const params = {
      model: "gpt-test",
      max_tokens: 64,
      messages: [{ role: "user" as const, content: PROMPT }],
    };
    const stream = client.messages.stream(params);
    const events: RawMessageStreamEvent[] = [];
    // copied as they come: the SDK's final message is message_start's object, updated in place
    stream.on("streamEvent", (event) => events.push(structuredClone(event)));
    const message = await stream.finalMessage();

    const first = events[0]!;
    assert.equal(first.type, "message_start");
    const announced = first.type === "message_start" ? first.message.usage.input_tokens : 0;
    assert.ok(announced > 0, "no longer 0: clients that read only the first event see the prompt");
    const counted = (await client.messages.countTokens(params)).input_tokens;
    assert.equal(announced, counted, "the gateway's own count, the one count_tokens answers");
    assert.notEqual(announced, UPSTREAM_PROMPT, "(the upstream counts otherwise)");

    // corrected in message_delta: the SDK's final message has the upstream's figures
    const delta = events.find((e) => e.type === "message_delta");
    assert.equal(delta?.type === "message_delta" && delta.usage.input_tokens, UPSTREAM_PROMPT);
    assert.equal(message.usage.input_tokens, UPSTREAM_PROMPT);
    assert.equal(message.usage.output_tokens, 5);

    const row = await env.gw.record(stream.request_id!);
    assert.equal(Number(row.prompt_tokens), UPSTREAM_PROMPT, "the record keeps the upstream's figure");
    assert.equal(Number(row.completion_tokens), 5);
    assert.equal(row.usage_source, "upstream");
  });

  test("a native stream announces the upstream's own message_start figures", async () => {
    const stream = env.anthropic(key).messages.stream({
      model: "claude",
      max_tokens: 64,
      messages: [{ role: "user", content: PROMPT }],
    });
    const events: RawMessageStreamEvent[] = [];
    stream.on("streamEvent", (event) => events.push(structuredClone(event)));
    const message = await stream.finalMessage();
    const first = events[0]!;
    assert.equal(
      first.type === "message_start" && first.message.usage.input_tokens,
      message.usage.input_tokens,
    );
    assert.equal(message.usage.input_tokens, UPSTREAM_PROMPT);
  });
});

test("chat completions' usage chunk and Responses' response.completed carry the upstream's figures", async () => {
  const openai = env.openai(key);
  const chat = await openai.chat.completions.create({
    model: "gpt-test",
    messages: [{ role: "user", content: PROMPT }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage: { prompt_tokens: number; completion_tokens: number } | null | undefined;
  for await (const chunk of chat) if (chunk.usage) usage = chunk.usage;
  assert.equal(usage?.prompt_tokens, UPSTREAM_PROMPT);
  assert.equal(usage?.completion_tokens, 5);

  // a Responses client on the Anthropic upstream: translated too
  const responses = await openai.responses.create({ model: "claude", input: PROMPT, stream: true });
  let completed: { input_tokens: number; output_tokens: number } | null | undefined;
  for await (const event of responses)
    if (event.type === "response.completed") completed = event.response.usage;
  assert.equal(completed?.input_tokens, UPSTREAM_PROMPT);
  assert.equal(completed?.output_tokens, 5);
});
