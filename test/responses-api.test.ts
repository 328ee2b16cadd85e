// OpenAI's Responses API through the gateway, with the official `openai` SDK's
// `client.responses` as the client, on three upstreams translated through the canonical
// request: the OpenAI-compatible mock, the Anthropic mock and the Gemini mock. Create, stream,
// function calls and their outputs sent back, previous_response_id (also across upstreams),
// retrieve and delete (and another account's id: 404), reasoning items, the custom
// apply_patch tool, built-in tools refused, content safety, bad input; a Codex-like session
// end to end; every call's record saying api=responses with the usage the client was told.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError, BadRequestError, NotFoundError } from "openai";
import type { FunctionTool, ResponseStreamEvent } from "openai/resources/responses/responses";
import { updateAccount } from "../src/accounts/accounts.ts";
import { withheldNotice } from "../src/safety/withheld.ts";
import type { CallRecordsTable } from "../src/store/schema.ts";
import { runCodexSession } from "./support/codex-session.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { startMockAnthropic } from "./support/mock-anthropic-upstream.ts";
import { startMockGemini } from "./support/mock-gemini-upstream.ts";
import { MOCK_REASONING, type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { MOCK_TOOL_TEXT } from "./support/mock-provider.ts";

const KEYS = { ANTHROPIC_KEY: "sk-ant-test-0123456789", GEMINI_KEY: "AIzaTest0123456789" };
const WORDS = "Hello world this is a mock reply from the model with some simple words for testing".split(" ");
const mockText = (n: number) => WORDS.slice(0, n).join(" ");
const BLOCKED = "forbiddenword";

const weather: FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "Current weather for a city",
  strict: false,
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const patchTool = {
  type: "custom" as const,
  name: "apply_patch",
  description: "Edit files with a patch.",
  format: {
    type: "grammar" as const,
    syntax: "lark" as const,
    definition: 'start: "*** Begin Patch" /(.|\\n)*/',
  },
};

let openai: MockUpstream;
let anthropic: MockUpstream;
let gemini: MockUpstream;
let gw: TestGateway;
let client: OpenAI;
let other: OpenAI;
/** another key of `client`'s account */
let sibling: OpenAI;
let guarded: OpenAI;
let live: OpenAI;
/** safety on, with the spec's JSON answer to a stream chosen for the account */
let jsonChosen: OpenAI;

/** The three upstreams every behaviour runs on; `body` reads what the upstream was sent. */
const UPSTREAMS = [
  { model: "gpt", mock: () => openai },
  { model: "claude", mock: () => anthropic },
  { model: "gemini", mock: () => gemini },
] as const;

const lastBody = (mock: MockUpstream) => mock.requests.at(-1)!.body;

/** The upstream request's texts, whatever its wire format: what the model read. */
const sentText = (mock: MockUpstream) => JSON.stringify(lastBody(mock));

before(async () => {
  [openai, anthropic, gemini] = await Promise.all([
    startMockUpstream(),
    startMockAnthropic({ apiKey: KEYS.ANTHROPIC_KEY }),
    startMockGemini({ apiKey: KEYS.GEMINI_KEY }),
  ]);
  const fast = { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 };
  gw = await startTestGateway({
    env: KEYS,
    config: {
      providers: [
        {
          id: "oai",
          type: "openai-compatible",
          base_url: openai.url,
          api_key_env: "MOCK_UPSTREAM_KEY",
          // as OpenAI's own API: custom tools go as they are
          custom_tools: "native",
          timeouts: fast,
        },
        // a server without custom tools (the default for any host but api.openai.com)
        { id: "oai-fn", type: "openai-compatible", base_url: openai.url, api_key_env: "MOCK_UPSTREAM_KEY" },
        {
          id: "claude",
          type: "anthropic",
          base_url: anthropic.url,
          api_key_env: "ANTHROPIC_KEY",
          timeouts: fast,
        },
        { id: "gem", type: "gemini", base_url: gemini.url, api_key_env: "GEMINI_KEY", timeouts: fast },
        {
          id: "gem-lenient",
          type: "gemini",
          base_url: gemini.url,
          api_key_env: "GEMINI_KEY",
          timeouts: fast,
        },
      ],
      models: [
        { id: "gpt", provider: "oai", upstream_model: "mock-model", max_output_tokens: 4096 },
        { id: "gpt-fn", provider: "oai-fn", upstream_model: "mock-model", max_output_tokens: 4096 },
        // thinking (reasoning.effort) needs a bound above Anthropic's 1024-token minimum budget
        { id: "claude", provider: "claude", upstream_model: "claude-sonnet-4-5", max_output_tokens: 4096 },
        { id: "gemini", provider: "gem", upstream_model: "gemini-2.5-flash", max_output_tokens: 4096 },
        {
          id: "gemini-lenient",
          provider: "gem-lenient",
          upstream_model: "gemini-2.5-flash",
          max_output_tokens: 4096,
        },
      ],
      plans: [
        {
          id: "default",
          quota_tokens: 1_000_000_000,
          models: ["gpt", "gpt-fn", "claude", "gemini", "gemini-lenient"],
        },
      ],
      safety: {
        enabled: false,
        timeout_ms: 5_000,
        reviewers: [{ type: "rules", terms: [BLOCKED], category: "blocked_terms" }],
      },
    },
  });
  const options = { baseURL: gw.baseURL, maxRetries: 0, timeout: 20_000 };
  const alice = await gw.account("alice");
  client = new OpenAI({ ...options, apiKey: (await gw.key(alice)).secret });
  sibling = new OpenAI({ ...options, apiKey: (await gw.key(alice, { name: "ci" })).secret });
  other = new OpenAI({ ...options, apiKey: (await gw.key(await gw.account("bob"))).secret });
  const reviewed = await gw.account("reviewed");
  await updateAccount(gw.gateway.deps.store.db, reviewed, { safety: "on" });
  guarded = new OpenAI({ ...options, apiKey: (await gw.key(reviewed)).secret });
  const segments = await gw.account("reviewed-streaming");
  await updateAccount(gw.gateway.deps.store.db, segments, { safety: "on", safety_streaming: "reviewed" });
  live = new OpenAI({ ...options, apiKey: (await gw.key(segments)).secret });
  const chosen = await gw.account("reviewed-json");
  await updateAccount(gw.gateway.deps.store.db, chosen, { safety: "on", safety_streaming: "json" });
  jsonChosen = new OpenAI({ ...options, apiKey: (await gw.key(chosen)).secret });
});

after(async () => {
  await gw?.close();
  await Promise.all([openai?.close(), anthropic?.close(), gemini?.close()]);
});

type CreateParams = Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, "stream">;

/** A whole Response with its call record. */
async function create(params: CreateParams, c: OpenAI = client) {
  const { data, response } = await c.responses.create({ ...params, stream: false }).withResponse();
  return {
    response: data,
    record: await gw.record(response.headers.get("x-request-id")!),
    headers: response.headers,
  };
}

/** A streamed Response: every event, the Response of response.completed, the record. */
async function stream(params: CreateParams) {
  const { data, response } = await client.responses.create({ ...params, stream: true }).withResponse();
  const events: ResponseStreamEvent[] = [];
  for await (const event of data) events.push(event);
  const completed = events.find((e) => e.type === "response.completed" || e.type === "response.incomplete");
  return {
    events,
    response: (completed as { response: OpenAI.Responses.Response } | undefined)?.response,
    record: await gw.record(response.headers.get("x-request-id")!),
  };
}

async function refusal(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof APIError, `expected an APIError, got ${String(err)}`);
    return err;
  }
  assert.fail("the call succeeded; it should have been refused");
}

/** The usage a Response says equals the record's: the client is told what it is charged. */
function assertUsageRecorded(response: OpenAI.Responses.Response, record: CallRecordsTable) {
  const usage = response.usage!;
  assert.equal(usage.input_tokens, Number(record.prompt_tokens));
  assert.equal(usage.output_tokens, Number(record.completion_tokens));
  assert.equal(usage.total_tokens, Number(record.total_tokens));
  assert.equal(usage.input_tokens_details.cached_tokens, Number(record.cached_tokens));
  assert.equal(usage.output_tokens_details.reasoning_tokens, Number(record.reasoning_tokens));
  assert.ok(usage.total_tokens > 0);
  assert.equal(record.api, "responses");
}

for (const { model, mock } of UPSTREAMS) {
  describe(`Responses API on ${model}`, () => {
    test("create: the Response, instructions as the system prompt, usage as charged, api=responses", async () => {
      const { response, record } = await create({
        model,
        input: "Say hello mock:tokens=5",
        instructions: "Be brief.",
      });
      assert.equal(response.object, "response");
      assert.match(response.id, /^resp_/);
      assert.equal(response.id.slice(5), record.request_id.slice(4), "the id is the record's");
      assert.equal(response.status, "completed");
      assert.equal(response.model, model);
      assert.equal(response.output_text, mockText(5));
      assert.equal(response.output.length, 1);
      assert.equal(response.output[0]!.type, "message");
      assert.equal(response.instructions, "Be brief.");
      assert.equal(record.status, "ok");
      assert.equal(record.stream, 0);
      assertUsageRecorded(response, record);
      assert.match(sentText(mock()), /Be brief\./);
    });

    test("stream: OpenAI's event sequence, numbered; response.completed carries the usage charged", async () => {
      const { events, response, record } = await stream({ model, input: "Say hello mock:tokens=6" });
      const types = events.map((e) => e.type);
      assert.deepEqual(types.slice(0, 4), [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
      ]);
      assert.deepEqual(types.slice(-4), [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
      ]);
      assert.deepEqual(
        events.map((e) => e.sequence_number),
        events.map((_, i) => i),
      );
      const deltas = events.filter((e) => e.type === "response.output_text.delta");
      assert.ok(deltas.length > 1, "text arrives in pieces");
      assert.equal(deltas.map((e) => e.delta).join(""), mockText(6));
      assert.equal(response!.output_text ?? (response!.output[0] as any).content[0].text, mockText(6));
      assert.equal(record.stream, 1);
      assertUsageRecorded(response!, record);
    });

    test("the SDK's stream helper puts the answer together", async () => {
      const runner = client.responses.stream({ model, input: "Say hello mock:tokens=3" });
      const final = await runner.finalResponse();
      assert.equal(final.output_text, mockText(3));
      assert.equal(final.status, "completed");
    });

    test("a function call, then its output sent back with previous_response_id", async () => {
      const first = await create({
        model,
        input: "Weather in Paris? mock:call=get_weather",
        tools: [weather],
      });
      const call = first.response.output.find((i) => i.type === "function_call");
      assert.ok(call && call.type === "function_call", "a function_call item");
      assert.equal(call.name, "get_weather");
      assert.deepEqual(JSON.parse(call.arguments), { city: MOCK_TOOL_TEXT });
      assert.match(call.id!, /^fc_/);
      assert.ok(call.call_id);
      assertUsageRecorded(first.response, first.record);

      const second = await create({
        model,
        previous_response_id: first.response.id,
        input: [
          {
            type: "function_call_output",
            call_id: call.call_id,
            output: "18 degrees and sunny mock:tokens=3",
          },
        ],
        tools: [weather],
      });
      assert.equal(second.response.status, "completed");
      assert.equal(second.response.previous_response_id, first.response.id);
      assert.ok(second.response.output_text.length > 0, "the result is answered with text");
      const sent = sentText(mock());
      assert.match(sent, /Weather in Paris\?/, "the stored conversation came first");
      assert.match(sent, /18 degrees and sunny/);
      assert.match(sent, /get_weather/);
    });

    test("streamed function call: argument deltas, then done events with the whole arguments", async () => {
      const { events, response } = await stream({
        model,
        input: "Weather? mock:call=get_weather",
        tools: [weather],
      });
      const added = events.find(
        (e) => e.type === "response.output_item.added" && e.item.type === "function_call",
      );
      assert.ok(added);
      const deltas = events.filter((e) => e.type === "response.function_call_arguments.delta");
      const done = events.find((e) => e.type === "response.function_call_arguments.done");
      assert.ok(done && done.type === "response.function_call_arguments.done");
      assert.equal(deltas.map((e) => e.delta).join(""), done.arguments);
      assert.deepEqual(JSON.parse(done.arguments), { city: MOCK_TOOL_TEXT });
      const item = response!.output.find((i) => i.type === "function_call");
      assert.equal(item?.type === "function_call" && item.arguments, done.arguments);
    });

    test("retrieve and delete; another account's id, a deleted one and store:false are 404", async () => {
      const { response } = await create({ model, input: "Keep this mock:tokens=2" });
      const got = await client.responses.retrieve(response.id);
      assert.deepEqual(got, response);
      const notFound = async (call: Promise<unknown>) => {
        const err = await refusal(call);
        assert.ok(err instanceof NotFoundError);
        assert.equal(err.code, "response_not_found");
      };
      await notFound(other.responses.retrieve(response.id));
      await notFound(other.responses.delete(response.id));
      assert.deepEqual(await client.responses.retrieve(response.id), response, "still there for its account");
      await client.responses.delete(response.id);
      await notFound(client.responses.retrieve(response.id));
      await notFound(client.responses.delete(response.id));
      const unstored = await create({ model, input: "Forget this mock:tokens=2", store: false });
      assert.equal((unstored.response as { store?: boolean }).store, false);
      await notFound(client.responses.retrieve(unstored.response.id));
      const err = await refusal(
        client.responses.create({ model, input: "go on", previous_response_id: unstored.response.id }),
      );
      assert.ok(err instanceof BadRequestError);
      assert.equal(err.code, "previous_response_not_found");
      assert.equal(err.param, "previous_response_id");
    });

    test("the custom apply_patch tool: a custom_tool_call comes back, its output goes back", async () => {
      const first = await create({ model, input: "Fix it mock:call=apply_patch now", tools: [patchTool] });
      const call = first.response.output.find((i) => i.type === "custom_tool_call");
      assert.ok(call && call.type === "custom_tool_call", "a custom_tool_call item");
      assert.equal(call.name, "apply_patch");
      assert.equal(call.input, MOCK_TOOL_TEXT);
      const sentTools = JSON.stringify(lastBody(mock()).tools);
      assert.match(sentTools, /apply_patch/);
      const second = await create({
        model,
        previous_response_id: first.response.id,
        input: [
          { type: "custom_tool_call_output", call_id: call.call_id, output: "Patch applied mock:tokens=3" },
        ],
        tools: [patchTool],
      });
      assert.equal(second.response.status, "completed");
      const sent = sentText(mock());
      assert.match(sent, /Patch applied/);
      assert.ok(
        sent.includes(JSON.stringify(MOCK_TOOL_TEXT).slice(1, 20)),
        "the patch went back as the call",
      );

      const { events } = await stream({
        model,
        input: "Fix it mock:call=apply_patch now",
        tools: [patchTool],
      });
      const deltas = events.filter((e) => e.type === "response.custom_tool_call_input.delta");
      const done = events.find((e) => e.type === "response.custom_tool_call_input.done");
      assert.ok(done && done.type === "response.custom_tool_call_input.done");
      assert.equal(done.input, MOCK_TOOL_TEXT);
      assert.equal(deltas.map((e) => e.delta).join(""), MOCK_TOOL_TEXT);
    });

    test("reasoning items sent back are accepted and not sent upstream", async () => {
      const { response } = await create({
        model,
        input: [
          { role: "user", content: "first question" },
          {
            type: "reasoning",
            id: "rs_1",
            summary: [{ type: "summary_text", text: "secretsummary" }],
            encrypted_content: "gAAAAAB-opaque",
          },
          {
            type: "message",
            id: "msg_1",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: "first answer", annotations: [] }],
          },
          { role: "user", content: "second question mock:tokens=2" },
        ],
        reasoning: { effort: "low", summary: "auto" },
      });
      assert.equal(response.status, "completed");
      const sent = sentText(mock());
      assert.doesNotMatch(sent, /secretsummary|opaque/);
      assert.match(sent, /first answer/);
    });

    test("a built-in tool the deployment does not allow is left out, and the client is told which", async () => {
      const before = mock().requests.length;
      const { response } = await client.responses
        .create({ model, input: "search mock:tokens=1", tools: [{ type: "web_search" }] })
        .withResponse();
      assert.equal(mock().requests.length, before + 1, "the call was answered");
      assert.equal(response.headers.get("x-gateway-dropped"), "tools[0] (web_search)");
      const record = await gw.record(response.headers.get("x-request-id")!);
      assert.equal(record.http_status, 200);
      assert.deepEqual(JSON.parse(record.params ?? "{}").dropped, ["tools[0] (web_search)"]);
    });

    test("a Codex-like session: reasoning, a shell call, the apply_patch call, the answer; nothing stored", async () => {
      // Codex always sends parallel_tool_calls: false, which Gemini cannot honour: its
      // provider for Codex drops what it cannot honour (docs/apis.md)
      const turns = await runCodexSession(client, model === "gemini" ? "gemini-lenient" : model);
      assert.equal(turns.length, 3, "shell call, patch call, answer");
      const kinds = turns.map((t) => t.items.map((i) => i.type).filter((type) => type !== "reasoning"));
      assert.deepEqual(kinds, [["function_call"], ["custom_tool_call"], ["message"]]);
      const [shell, patch] = [turns[0]!.items.at(-1) as any, turns[1]!.items.at(-1) as any];
      assert.equal(shell.name, "shell_command");
      assert.equal(patch.name, "apply_patch");
      assert.equal(patch.input, MOCK_TOOL_TEXT);
      for (const turn of turns) {
        assert.equal(turn.events[0]!.type, "response.created");
        assert.equal(turn.events.at(-1)!.type, "response.completed");
        assert.equal((turn.completed as { store?: boolean }).store, false);
        const record = await gw.record(turn.requestId!);
        assertUsageRecorded(turn.completed!, record);
        await assert.rejects(client.responses.retrieve(turn.completed!.id), NotFoundError);
      }
      // the last turn's upstream request holds the whole conversation, the patch included
      const sent = sentText(mock());
      assert.match(sent, /coding agent running in a terminal/);
      assert.match(sent, /Success\. Updated the following files/);
      assert.match(sent, /shell_command/);
      if (model === "gpt") {
        const reasoning = turns[0]!.items.find((i) => i.type === "reasoning") as any;
        assert.deepEqual(reasoning?.content, [{ type: "reasoning_text", text: MOCK_REASONING }]);
      }
    });
  });
}

describe("Responses API across upstreams and edge cases", () => {
  test("previous_response_id continues a conversation on another upstream", async () => {
    const a = await create({ model: "gpt", input: "My name is Ada. mock:tokens=2" });
    const b = await create({
      model: "claude",
      input: "Remember it. mock:tokens=2",
      previous_response_id: a.response.id,
    });
    const c = await create({
      model: "gemini",
      input: "What is my name?",
      previous_response_id: b.response.id,
    });
    assert.equal(c.response.status, "completed");
    const contents = lastBody(gemini).contents as Array<{ role: string; parts: Array<{ text?: string }> }>;
    const texts = contents.map((m) => `${m.role}: ${m.parts.map((p) => p.text ?? "").join("")}`);
    assert.deepEqual(texts, [
      "user: My name is Ada. mock:tokens=2",
      `model: ${mockText(2)}`,
      "user: Remember it. mock:tokens=2",
      `model: ${mockText(2)}`,
      "user: What is my name?",
    ]);
  });

  test("the custom tool goes as it is to an upstream with custom tools, as a function to one without", async () => {
    await create({ model: "gpt", input: "x mock:call=apply_patch y", tools: [patchTool] });
    assert.deepEqual(lastBody(openai).tools, [
      {
        type: "custom",
        custom: {
          name: "apply_patch",
          description: "Edit files with a patch.",
          format: { type: "grammar", grammar: { syntax: "lark", definition: patchTool.format.definition } },
        },
      },
    ]);
    const viaFunction = await create({
      model: "gpt-fn",
      input: "x mock:call=apply_patch y",
      tools: [patchTool],
    });
    const sent = lastBody(openai).tools[0];
    assert.equal(sent.type, "function");
    assert.equal(sent.function.name, "apply_patch");
    assert.ok(sent.function.parameters.properties.input.description.includes(patchTool.format.definition));
    const call = viaFunction.response.output.find((i) => i.type === "custom_tool_call");
    assert.equal(call?.type === "custom_tool_call" && call.input, MOCK_TOOL_TEXT);
  });

  test("reasoning: an upstream's reasoning text is a reasoning item, its tokens counted apart", async () => {
    const { response, record } = await create({ model: "gpt", input: "Think mock:reasoning mock:tokens=2" });
    assert.equal(response.output[0]!.type, "reasoning");
    assert.deepEqual((response.output[0] as any).content, [{ type: "reasoning_text", text: MOCK_REASONING }]);
    assert.equal(response.usage!.output_tokens_details.reasoning_tokens, 3);
    assertUsageRecorded(response, record);
    const { events } = await stream({ model: "gpt", input: "Think mock:reasoning mock:tokens=2" });
    const deltas = events.filter((e) => e.type === "response.reasoning_text.delta");
    assert.equal(deltas.map((e) => e.delta).join(""), MOCK_REASONING);
    // Gemini's thinking is counted, though its text is not carried
    const gem = await create({ model: "gemini", input: "Think mock:thinking=7 mock:tokens=2" });
    assert.equal(gem.response.usage!.output_tokens_details.reasoning_tokens, 7);
    assert.equal(gem.response.output[0]!.type, "message");
  });

  test("a cut answer is incomplete: max_output_tokens", async () => {
    const { response, record } = await create({
      model: "claude",
      input: "Talk mock:tokens=50",
      max_output_tokens: 20,
    });
    assert.equal(response.status, "incomplete");
    assert.deepEqual(response.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(response.max_output_tokens, 20);
    assertUsageRecorded(response, record);
    const { events } = await stream({ model: "gpt", input: "Talk mock:tokens=50", max_output_tokens: 20 });
    assert.equal(events.at(-1)!.type, "response.incomplete");
  });

  test("text.format json_schema is response_format upstream", async () => {
    await create({
      model: "gpt",
      input: "Give JSON mock:tokens=2",
      max_output_tokens: 100,
      text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
    });
    assert.deepEqual(lastBody(openai).response_format, {
      type: "json_schema",
      json_schema: { name: "out", schema: { type: "object" }, strict: true },
    });
    assert.equal(lastBody(openai).max_completion_tokens, 100, "max_output_tokens' field");
  });

  test("content safety on: a streamed request is a reviewed stream unless json was chosen; a flag withholds the answer", async () => {
    const streamed = await guarded.responses.create({
      model: "gpt",
      input: "hi mock:tokens=3",
      stream: true,
    });
    const seen: string[] = [];
    for await (const event of streamed) seen.push(event.type);
    assert.equal(seen.at(-1), "response.completed", "nobody chose the mode: reviewed streaming");

    const res = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${jsonChosen.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt", input: "hi mock:tokens=3", stream: true }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(res.headers.get("x-content-safety-stream"), "json");
    const body = (await res.json()) as OpenAI.Responses.Response;
    assert.equal(body.object, "response");
    assert.equal(body.status, "completed");
    assert.equal((body.output[0] as any).content[0].text, mockText(3));

    const flagged = await create({ model: "gpt", input: `say mock:text=${BLOCKED} mock:tokens=2` }, guarded);
    // completed, not incomplete: Codex takes an incomplete response for a dropped stream and retries
    assert.equal(flagged.response.status, "completed");
    assert.equal(flagged.response.incomplete_details, null);
    assert.equal(
      flagged.response.output_text,
      withheldNotice(flagged.headers.get("x-request-id")!),
      "the gateway's notice, naming the request",
    );
    assert.doesNotMatch(JSON.stringify(flagged.response.output), new RegExp(BLOCKED));
    assert.deepEqual((flagged.response as any).safety.categories, ["blocked_terms"]);
    assert.equal(flagged.record.safety_verdict, "flagged");
    assert.deepEqual(
      await guarded.responses.retrieve(flagged.response.id),
      flagged.response,
      "stored as withheld",
    );
  });

  test("reviewed streaming: the events come as reviewed; a flag ends the Response completed with the notice", async () => {
    const clean = await live.responses.create({ model: "gpt", input: "hi mock:tokens=6", stream: true });
    const types: string[] = [];
    for await (const event of clean) types.push(event.type);
    assert.equal(types.at(-1), "response.completed");
    const { data: flagged, response: res } = await live.responses
      .create({ model: "gpt", input: `say mock:text=${BLOCKED} mock:tokens=3`, stream: true })
      .withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const event of flagged) events.push(event);
    const end = events.at(-1)!;
    assert.equal(end.type, "response.completed");
    const response = (end as { response: OpenAI.Responses.Response }).response;
    assert.equal(response.status, "completed");
    assert.equal(response.incomplete_details, null);
    const notice = response.output.at(-1) as OpenAI.Responses.ResponseOutputMessage;
    assert.deepEqual(notice.content, [
      {
        type: "output_text",
        text: withheldNotice(res.headers.get("x-request-id")!),
        annotations: [],
        logprobs: [],
      },
    ]);
    assert.deepEqual((response as any).safety.categories, ["blocked_terms"]);
    assert.doesNotMatch(JSON.stringify(events), new RegExp(BLOCKED), "nothing flagged reached the client");
  });

  test("a stream that breaks after it began: response.failed, then an error event the SDK raises", async () => {
    const res = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${client.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt", input: "talk mock:tokens=20 mock:drop-after=3", stream: true }),
    });
    const blocks = (await res.text()).trim().split("\n\n");
    const [failed, error] = blocks.slice(-2).map((b) => ({
      event: b.split("\n")[0]!.slice("event: ".length),
      data: JSON.parse(b.split("\n")[1]!.slice("data: ".length)),
    }));
    assert.equal(failed!.event, "response.failed");
    assert.equal(failed!.data.response.status, "failed");
    assert.equal(failed!.data.response.error.code, "upstream_error");
    assert.equal(error!.event, "error");
    assert.equal(error!.data.code, "upstream_error");
    const record = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(record.status, "upstream_error");
    assert.equal(record.api, "responses");

    const stream = await client.responses.create({
      model: "gpt",
      input: "talk mock:tokens=20 mock:drop-after=3",
      stream: true,
    });
    const seen: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const event of stream) seen.push(event.type);
      })(),
      APIError,
    );
    assert.ok(seen.includes("response.output_text.delta"), "what came before the break was delivered");
  });

  test("cache reads are input_tokens_details.cached_tokens", async () => {
    const { response, record } = await create({ model: "claude", input: "cached mock:cache mock:tokens=2" });
    assert.equal(response.usage!.input_tokens_details.cached_tokens, 11);
    assertUsageRecorded(response, record);
  });

  test("bad input is a 400 naming the parameter, never a 500, and recorded", async () => {
    const bad = async (body: unknown, param: string | null) => {
      const res = await fetch(`${gw.baseURL}/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${client.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 400, JSON.stringify(body));
      const { error } = (await res.json()) as { error: { param: string | null; type: string } };
      assert.equal(error.param, param, JSON.stringify(body));
      assert.equal(error.type, "invalid_request_error");
      const record = await gw.record(res.headers.get("x-request-id")!);
      assert.equal(record.api, "responses");
    };
    await bad({ model: "gpt" }, "input");
    await bad({ model: "gpt", input: 42 }, "input");
    await bad({ model: "gpt", input: [{ type: "", id: "x" }] }, "input[0].type");
    await bad({ model: "gpt", input: [{ role: "robot", content: "x" }] }, "input[0].role");
    await bad({ model: "gpt", input: [{ type: "function_call_output", output: "x" }] }, "input[0].call_id");
    await bad({ model: "gpt", input: "x", tools: [{ type: "function" }] }, "tools[0].name");
    await bad({ model: "gpt", input: "x", background: true }, "background");
    await bad({ model: "gpt", input: "x", temperature: 7 }, "temperature");
    await bad({ model: "gpt", input: [] }, "input");
    await bad({ model: "gpt", input: "x", previous_response_id: "resp_nope" }, "previous_response_id");
    await bad([1, 2], null);
  });

  // Second audit, item 10: a response is its key's (responses.visibility: key, the default).
  test("another key of the same account cannot read, continue, reference or delete a response", async () => {
    const mine = await client.responses.create({ model: "gpt", input: "keep me mock:tokens=2" });
    await assert.rejects(sibling.responses.retrieve(mine.id), NotFoundError);
    await assert.rejects(sibling.responses.delete(mine.id), NotFoundError);
    await assert.rejects(
      sibling.responses.create({ model: "gpt", input: "go on", previous_response_id: mine.id }),
      (err: APIError) => err.status === 400 && err.param === "previous_response_id",
    );
    const item = mine.output[0]!.id!;
    await assert.rejects(
      sibling.responses.create({ model: "gpt", input: [{ type: "item_reference", id: item }] as never }),
      (err: APIError) => err.status === 400 && err.param === "input[0]",
    );
    assert.equal((await client.responses.retrieve(mine.id)).id, mine.id, "its own key still can");
  });

  // The AI SDK's second turn sends the earlier output back by reference (store is on).
  test("an item_reference to the key's own stored item is the item itself, on every upstream", async () => {
    const first = await client.responses.create({ model: "gpt", input: "first mock:tokens=3" });
    const before = anthropic.requests.length;
    const second = await client.responses.create({
      model: "claude",
      input: [
        { role: "user", content: "first" },
        { type: "item_reference", id: first.output[0]!.id! },
        { role: "user", content: "and now? mock:tokens=1" },
      ] as never,
    });
    assert.equal(second.status, "completed");
    const sent = anthropic.requests.at(before)!.body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    assert.deepEqual(
      sent.messages.map((m) => m.role),
      ["user", "assistant", "user"],
      "the referenced assistant message went upstream in its place",
    );
  });

  // What the gateway does not know is no bad input: a translation leaves it out and says so.
  test("items, tools and fields the gateway does not translate are left out with a notice, not refused", async () => {
    const { response } = await client.responses
      .create({
        model: "gpt",
        input: [
          { role: "user", content: "x mock:tokens=1" },
          { type: "web_search_call", id: "ws", status: "completed" },
          { type: "compaction_summary", id: "cs", summary: "earlier" },
        ],
        tools: [{ type: "file_search", vector_store_ids: ["vs"] }],
        tool_choice: { type: "web_search_preview" },
        client_metadata: { session: "s1" },
      } as never)
      .withResponse();
    assert.equal(
      response.headers.get("x-gateway-dropped"),
      "client_metadata, input[2] (compaction_summary), tools[0] (file_search), tool_choice (web_search_preview), input[1] (web_search_call)",
    );
    const sent = openai.requests.at(-1)!.body as Record<string, unknown>;
    assert.equal("client_metadata" in sent, false);
    assert.equal("tools" in sent, false);
  });

  // docs/apis.md lists these as not offered, answered as any unknown route: the code is the
  // catalog's (http_error), in OpenAI's envelope, which the SDK raises as NotFoundError.
  test("the sub-routes not offered answer 404 http_error in OpenAI's envelope", async () => {
    const { response } = await create({ model: "gpt", input: "keep me mock:tokens=1" });
    for (const [method, path] of [
      ["GET", `/responses/${response.id}/input_items`],
      ["POST", `/responses/${response.id}/cancel`],
      ["POST", "/responses/input_tokens"],
      ["POST", "/responses/compact"],
      ["PUT", "/responses"],
    ] as const) {
      const res = await fetch(`${gw.baseURL}${path}`, {
        method,
        headers: { authorization: `Bearer ${client.apiKey}`, "content-type": "application/json" },
        ...(method === "GET" ? {} : { body: JSON.stringify({ model: "gpt", input: "x" }) }),
      });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.deepEqual(await res.json(), {
        error: {
          message: `Unknown route: ${method} /v1${path}`,
          type: "dev_gateway_error",
          param: null,
          code: "http_error",
        },
      });
    }
    const err = await refusal(client.responses.inputItems.list(response.id));
    assert.ok(err instanceof NotFoundError, `expected NotFoundError, got ${err.constructor.name}`);
    assert.equal(err.code, "http_error");
  });
});
