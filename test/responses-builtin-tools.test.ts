// OpenAI's built-in tools through the Responses API, with the official `openai` SDK's
// `client.responses` as the client: passed on natively to an OpenAI upstream whose provider
// allows them (`responses_builtin_tools`), its web_search_call item and text reaching the
// client whole and streamed, the usage charged as the upstream's Response reported it, stored
// and continued; refused naming the tool, before anything is sent, on a provider that does not
// allow it and on an Anthropic deployment the model is routed to; content safety on the
// native answer, and a native stream cut after it began.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError, BadRequestError } from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { updateAccount } from "../src/accounts/accounts.ts";
import type { CallRecord } from "../src/records/call-record.ts";
import { withheldNotice } from "../src/safety/withheld.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { startMockAnthropic } from "./support/mock-anthropic-upstream.ts";
import { MOCK_SEARCH_URL, WEB_SEARCH_INPUT_TOKENS } from "./support/mock-openai-responses.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { WORDS } from "./support/mock-provider.ts";

const KEYS = { ANTHROPIC_KEY: "sk-ant-test-0123456789" };
const mockText = (n: number) => WORDS.slice(0, n).join(" ");
const countWords = (s: string) => s.trim().split(/\s+/).length;
/** the search model's prices, USD per million tokens */
const PRICES = { input: 2.5, output: 10, cached_input: 1.25 };
const nano = (tokens: number, usdPerMillion: number) => Math.round(tokens * usdPerMillion * 1_000);
const BOUND = 2048;

let openai: MockUpstream;
let anthropic: MockUpstream;
let gw: TestGateway;
let client: OpenAI;
/** content safety on: answers reviewed whole */
let guarded: OpenAI;
/** content safety on, streams released in reviewed segments */
let live: OpenAI;
const BLOCKED = "forbiddenword";

before(async () => {
  [openai, anthropic] = await Promise.all([
    startMockUpstream(),
    startMockAnthropic({ apiKey: KEYS.ANTHROPIC_KEY }),
  ]);
  const fast = { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 };
  gw = await startTestGateway({
    env: KEYS,
    config: {
      providers: [
        {
          id: "oai-search",
          type: "openai-compatible",
          base_url: openai.url,
          api_key_env: "MOCK_UPSTREAM_KEY",
          responses_builtin_tools: ["web_search"],
          timeouts: fast,
          // strict: what a provider does not pass on is refused (by default it is dropped with a
          // notice: test/responses-api.test.ts)
          strict: true,
        },
        {
          id: "oai",
          type: "openai-compatible",
          base_url: openai.url,
          api_key_env: "MOCK_UPSTREAM_KEY",
          strict: true,
        },
        {
          id: "claude",
          type: "anthropic",
          base_url: anthropic.url,
          api_key_env: "ANTHROPIC_KEY",
          timeouts: fast,
          strict: true,
        },
      ],
      models: [
        {
          id: "search",
          provider: "oai-search",
          upstream_model: "gpt-4.1-mock",
          max_output_tokens: BOUND,
          pricing: PRICES,
        },
        { id: "plain", provider: "oai", upstream_model: "mock-model", max_output_tokens: BOUND },
        {
          id: "claude-first",
          routing: "ordered",
          max_output_tokens: BOUND,
          deployments: [
            { provider: "claude", upstream_model: "claude-sonnet-4-5" },
            { provider: "oai-search", upstream_model: "gpt-4.1-mock" },
          ],
        },
      ],
      plans: [{ id: "default", quota_tokens: 1_000_000_000, models: ["search", "plain", "claude-first"] }],
      safety: {
        enabled: false,
        timeout_ms: 5_000,
        reviewers: [{ type: "rules", terms: [BLOCKED], category: "blocked_terms" }],
      },
    },
  });
  const options = { baseURL: gw.baseURL, maxRetries: 0, timeout: 20_000 };
  client = new OpenAI({ ...options, apiKey: (await gw.key(await gw.account("alice"))).secret });
  const reviewed = await gw.account("reviewed");
  await updateAccount(gw.gateway.deps.store.db, reviewed, { safety: "on" });
  guarded = new OpenAI({ ...options, apiKey: (await gw.key(reviewed)).secret });
  const segments = await gw.account("reviewed-streaming");
  await updateAccount(gw.gateway.deps.store.db, segments, { safety: "on", safety_streaming: "reviewed" });
  live = new OpenAI({ ...options, apiKey: (await gw.key(segments)).secret });
});

after(async () => {
  await gw?.close();
  await Promise.all([openai?.close(), anthropic?.close()]);
});

const responsesCalls = () => openai.requests.filter((r) => r.path === "/v1/responses");
const lastResponsesBody = () => responsesCalls().at(-1)!.body;

/** The usage a Response says equals its record's, and is what the upstream reported for `input`. */
function assertCharged(response: OpenAI.Responses.Response, record: CallRecord, input: string) {
  const usage = response.usage!;
  const prompt = countWords(input) + WEB_SEARCH_INPUT_TOKENS;
  assert.equal(usage.input_tokens, prompt, "the upstream's count, search content included");
  assert.equal(Number(record.prompt_tokens), prompt);
  assert.equal(Number(record.completion_tokens), usage.output_tokens);
  assert.equal(Number(record.total_tokens), usage.total_tokens);
  assert.equal(Number(record.cached_tokens), usage.input_tokens_details.cached_tokens);
  assert.equal(record.usage_source, "upstream");
  assert.equal(Number(record.overrun_tokens), 0, "the prompt bound covered the native body");
  assert.equal(record.api, "responses");
  const cached = usage.input_tokens_details.cached_tokens;
  assert.equal(
    Number(record.cost_nanos),
    nano(prompt - cached, PRICES.input) +
      nano(cached, PRICES.cached_input) +
      nano(usage.output_tokens, PRICES.output),
  );
}

async function refused(call: Promise<unknown>): Promise<APIError> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof BadRequestError, `expected a 400, got ${String(err)}`);
    return err;
  }
  assert.fail("the call succeeded; it should have been refused");
}

describe("built-in tools allowed (responses_builtin_tools: [web_search])", () => {
  test("JSON: the web_search_call item and the text reach the client; the upstream got the native body", async () => {
    const chatBefore = openai.requests.filter((r) => r.path === "/v1/chat/completions").length;
    const input = "What is new today mock:tokens=5 mock:cache";
    const { data: response, response: raw } = await client.responses
      .create({ model: "search", input, tools: [{ type: "web_search" }] })
      .withResponse();
    const record = await gw.record(raw.headers.get("x-request-id")!);
    assert.equal(response.id, `resp_${record.request_id.slice(4)}`, "the gateway's id");
    assert.equal(response.model, "search", "the public model");
    assert.equal((response as { store?: boolean }).store, true, "the client's setting, not the upstream's");
    assert.deepEqual(
      response.output.map((item) => item.type),
      ["web_search_call", "message"],
    );
    const search = response.output[0] as OpenAI.Responses.ResponseFunctionWebSearch;
    assert.equal((search.action as { query?: string }).query, "What is new today");
    assert.equal(response.output_text, mockText(5));
    const message = response.output[1] as OpenAI.Responses.ResponseOutputMessage;
    const text = message.content[0] as OpenAI.Responses.ResponseOutputText;
    assert.equal((text.annotations[0] as { url?: string }).url, MOCK_SEARCH_URL);
    assertCharged(response, record, input);
    assert.equal(response.usage!.input_tokens_details.cached_tokens, 3);

    const sent = lastResponsesBody();
    assert.equal(sent.model, "gpt-4.1-mock");
    assert.equal(sent.store, false, "the gateway stores responses itself");
    assert.equal(sent.max_output_tokens, BOUND, "the reserved bound");
    assert.deepEqual(sent.tools, [{ type: "web_search" }]);
    assert.equal(
      openai.requests.filter((r) => r.path === "/v1/chat/completions").length,
      chatBefore,
      "no chat completion was sent",
    );
  });

  test("stream: OpenAI's events passed on (web search progress included), renumbered and restamped", async () => {
    const input = "Search the news mock:tokens=6";
    const { data, response: raw } = await client.responses
      .create({ model: "search", input, tools: [{ type: "web_search" }], stream: true })
      .withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const event of data) events.push(event);
    const record = await gw.record(raw.headers.get("x-request-id")!);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 3), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
    ]);
    assert.ok(types.includes("response.web_search_call.searching"), types.join());
    assert.ok(types.includes("response.output_text.annotation.added"), types.join());
    assert.equal(types.at(-1), "response.completed");
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    const added = events.find((e) => e.type === "response.output_item.added")!;
    assert.equal((added as { item: { type: string } }).item.type, "web_search_call");
    const deltas = events.filter((e) => e.type === "response.output_text.delta");
    assert.equal(deltas.map((e) => e.delta).join(""), mockText(6));
    const id = `resp_${record.request_id.slice(4)}`;
    for (const e of events)
      if ("response" in e) {
        assert.equal(e.response.id, id, e.type);
        assert.equal(e.response.model, "search", e.type);
      }
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    assert.deepEqual(
      completed.response.output.map((item) => item.type),
      ["web_search_call", "message"],
    );
    assert.equal(record.stream, 1);
    assertCharged(completed.response, record, input);
    assert.equal(lastResponsesBody().stream, true);
  });

  test("the SDK's stream helper puts the answer together", async () => {
    const final = await client.responses
      .stream({ model: "search", input: "Look it up mock:tokens=3", tools: [{ type: "web_search" }] })
      .finalResponse();
    assert.equal(final.output_text, mockText(3));
    assert.equal(final.output[0]!.type, "web_search_call");
  });

  test("stored with its web_search_call; continued natively (the items sent back), refused on a translating upstream", async () => {
    const first = await client.responses.create({
      model: "search",
      input: "Find the weather mock:tokens=4",
      tools: [{ type: "web_search" }],
    });
    const stored = await client.responses.retrieve(first.id);
    assert.deepEqual(
      stored.output.map((item) => item.type),
      ["web_search_call", "message"],
    );

    const next = await client.responses.create({
      model: "search",
      input: "And tomorrow? mock:tokens=2",
      previous_response_id: first.id,
    });
    assert.equal(next.output_text, mockText(2));
    assert.equal(next.previous_response_id, first.id);
    const sent = lastResponsesBody();
    assert.equal(sent.previous_response_id, undefined, "the gateway expands the conversation itself");
    assert.deepEqual(
      sent.input.map((item: { type?: string; role?: string }) => item.type ?? item.role),
      ["message", "web_search_call", "message", "message"],
    );
    assert.equal(sent.input[1].id, first.output[0]!.id);

    const before = openai.requests.length;
    const err = await refused(
      client.responses.create({ model: "plain", input: "Go on", previous_response_id: first.id }),
    );
    assert.equal(err.param, "previous_response_id");
    assert.match(err.message, /web_search_call/);
    assert.equal(openai.requests.length, before, "nothing was sent");
  });
});

describe("a native stream that breaks", () => {
  test("after it began: response.failed with the items done, then an error event the SDK raises; recorded upstream_error", async () => {
    const res = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${client.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "search",
        input: "talk mock:tokens=20 mock:drop-after=3",
        tools: [{ type: "web_search" }],
        stream: true,
      }),
    });
    assert.equal(res.status, 200);
    const events = (await res.text())
      .trim()
      .split("\n\n")
      .map((block) => JSON.parse(block.slice(block.indexOf("data: ") + 6)) as Record<string, any>);
    const [failed, error] = events.slice(-2);
    assert.equal(failed!.type, "response.failed");
    assert.equal(failed!.response.status, "failed");
    assert.equal(failed!.response.id, `resp_${res.headers.get("x-request-id")!.slice(4)}`);
    assert.deepEqual(
      failed!.response.output.map((item: { type: string }) => item.type),
      ["web_search_call"],
      "the items done before the break",
    );
    assert.equal(error!.type, "error");
    assert.equal(error!.code, "upstream_error");
    assert.equal(events.filter((e) => e.type === "response.output_text.delta").length, 3);
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
    const record = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(record.status, "upstream_error");

    const stream = await client.responses.create({
      model: "search",
      input: "talk mock:tokens=20 mock:drop-after=3",
      tools: [{ type: "web_search" }],
      stream: true,
    });
    await assert.rejects(async () => {
      for await (const _ of stream);
    }, APIError);
  });
});

describe("content safety on a native answer", () => {
  test("reviewed whole: a clean answer passes with its web_search_call; a flagged one is withheld, charged, stored as withheld", async () => {
    const tools = [{ type: "web_search" as const }];
    const clean = await guarded.responses.create({ model: "search", input: "news mock:tokens=3", tools });
    assert.equal(clean.status, "completed");
    assert.equal(clean.output[0]!.type, "web_search_call");
    assert.equal(clean.output_text, mockText(3));

    const { data: flagged, response: raw } = await guarded.responses
      .create({ model: "search", input: `news mock:text=${BLOCKED} mock:tokens=3`, tools })
      .withResponse();
    const record = await gw.record(raw.headers.get("x-request-id")!);
    // completed with the gateway's notice: Codex retries an incomplete (content_filter) response
    assert.equal(flagged.status, "completed");
    assert.equal(flagged.incomplete_details, null);
    assert.equal(flagged.output_text, withheldNotice(raw.headers.get("x-request-id")!));
    assert.doesNotMatch(JSON.stringify(flagged), new RegExp(BLOCKED));
    assert.deepEqual((flagged as any).safety.categories, ["blocked_terms"]);
    assert.equal(record.safety_verdict, "flagged");
    assert.equal(
      Number(record.prompt_tokens),
      countWords("news mock:text=x mock:tokens=3") + WEB_SEARCH_INPUT_TOKENS,
    );
    assert.equal(Number(record.completion_tokens), 3, "the upstream's work is charged");
    assert.deepEqual(await guarded.responses.retrieve(flagged.id), flagged, "stored as withheld");
  });

  test("reviewed streaming: the upstream's events as reviewed; a flag ends the Response completed with the notice, nothing flagged sent", async () => {
    const { data: stream, response: raw } = await live.responses
      .create({
        model: "search",
        input: `news mock:text=${BLOCKED} mock:tokens=3`,
        tools: [{ type: "web_search" }],
        stream: true,
      })
      .withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const end = events.at(-1)!;
    assert.equal(end.type, "response.completed");
    const response = (end as { response: OpenAI.Responses.Response }).response;
    assert.equal(response.incomplete_details, null);
    const notice = response.output.at(-1) as OpenAI.Responses.ResponseOutputMessage;
    assert.equal(
      (notice.content[0] as { text: string }).text,
      withheldNotice(raw.headers.get("x-request-id")!),
    );
    assert.deepEqual((response as any).safety.categories, ["blocked_terms"]);
    assert.doesNotMatch(JSON.stringify(events), new RegExp(BLOCKED), "nothing flagged reached the client");
    assert.deepEqual(
      events.map((e) => e.sequence_number),
      events.map((_, i) => i),
    );
  });
});

describe("built-in tools not allowed", () => {
  test("a provider without the setting: 400 naming the tool, nothing sent, recorded at no charge", async () => {
    const before = openai.requests.length;
    const err = await refused(
      client.responses.create({ model: "plain", input: "search", tools: [{ type: "web_search" }] }),
    );
    assert.equal(err.param, "tools[0]");
    assert.match(err.message, /'web_search'/);
    assert.equal(openai.requests.length, before);
    const record = await gw.record(err.headers!.get("x-request-id")!);
    assert.equal(record.api, "responses");
    assert.equal(record.http_status, 400);
    assert.equal(Number(record.total_tokens), 0);
    assert.equal(Number(record.cost_nanos), 0);
  });

  test("a tool the provider does not allow beside one it does: refused naming that one", async () => {
    const before = openai.requests.length;
    const err = await refused(
      client.responses.create({
        model: "search",
        input: "search",
        tools: [{ type: "web_search" }, { type: "file_search", vector_store_ids: ["vs_1"] }],
      }),
    );
    assert.equal(err.param, "tools[1]");
    assert.match(err.message, /'file_search'/);
    assert.equal(openai.requests.length, before);
  });

  test("allowed on one deployment, but the model is routed to an Anthropic one first: 400 naming the tool", async () => {
    const before = { openai: openai.requests.length, anthropic: anthropic.requests.length };
    const err = await refused(
      client.responses.create({ model: "claude-first", input: "search", tools: [{ type: "web_search" }] }),
    );
    assert.equal(err.param, "tools[0]");
    assert.match(err.message, /'web_search'/);
    assert.equal(anthropic.requests.length, before.anthropic, "nothing sent to Anthropic");
    assert.equal(openai.requests.length, before.openai, "and no failover around the refusal");
  });

  test("without built-in tools the same model is served, translated", async () => {
    const response = await client.responses.create({ model: "claude-first", input: "hello mock:tokens=3" });
    assert.equal(response.status, "completed");
    assert.equal(response.output[0]!.type, "message");
  });
});
