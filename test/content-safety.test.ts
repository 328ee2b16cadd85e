// Content safety end to end (spec 1 and 4.2), with the rules reviewer: a real gateway on both
// stores in front of the mock upstream, called over HTTP and with the official `openai` SDK.
// The streaming rules, flagged output (200, content_filter, no model text, charged), flagged
// input (400, nothing sent upstream, nothing charged), the plan and account overrides, the
// records and the metrics.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { BadRequestError } from "openai";
import { Stream } from "openai/core/streaming";
import type { ChatCompletion, ChatCompletionChunk } from "openai/resources/chat/completions";
import { updateAccount } from "../src/accounts/accounts.ts";
import { withheldNotice } from "../src/safety/withheld.ts";
import type { CallRecordsTable } from "../src/store/schema.ts";
import {
  type StoreKind,
  startTestGateway,
  TEST_MODEL,
  type TestGateway,
  testConfig,
} from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { loadContract } from "./support/openapi-validate.ts";
import { storeSuite } from "./support/postgres.ts";
import { parseStream, until } from "./support/stream-assertions.ts";

const STORES: StoreKind[] = (process.env.TEST_STORES ?? "sqlite,postgres")
  .split(",")
  .map((s) => s.trim())
  .filter((s): s is StoreKind => s === "sqlite" || s === "postgres");

/** the word the rules reviewer blocks; the mock says it when told `mock:text=forbidden` */
const BLOCKED = "forbidden";
/** the 16th of the mock's default words: a long default answer is flagged part way through */
const LATE_WORD = "testing";
const MOCK_TEXT = "Hello world this is a mock reply from the model with some simple words for testing";

function safetyConfig(upstream: MockUpstream, reviewInput: boolean) {
  const base = testConfig(upstream);
  return {
    plans: [
      ...base.plans!,
      // safety off for this plan's accounts, whatever the global setting
      { id: "open", quota_tokens: 1_000_000_000, models: [TEST_MODEL], safety: { enabled: false } },
      // reviewed streaming for this plan's accounts
      {
        id: "live",
        quota_tokens: 1_000_000_000,
        models: [TEST_MODEL],
        safety: { streaming: "reviewed" as const },
      },
    ],
    safety: {
      enabled: true,
      review_input: reviewInput,
      timeout_ms: 5_000,
      segment_tokens: 4, // segments of about 16 characters: several reviews per answer
      // these suites withhold many answers of one key on purpose (test/withheld-answers.test.ts
      // tests the bound)
      withheld_limit: { max: 1_000 },
      reviewers: [
        {
          type: "rules" as const,
          terms: [BLOCKED, LATE_WORD, "get_weather", "can't help"],
          patterns: ["\\bcard number\\b"],
          category: "blocked_terms",
        },
      ],
    },
  };
}

for (const store of STORES) {
  describe(`content safety with the rules reviewer (${store} store)`, await storeSuite(store), () => {
    let upstream: MockUpstream;
    let gw: TestGateway;
    let accountId: string;
    let secret: string;
    let keyId: string;

    before(async () => {
      upstream = await startMockUpstream({});
      gw = await startTestGateway({ upstream, store, config: safetyConfig(upstream, false) });
      accountId = await gw.account("safe");
      ({ id: keyId, secret } = await gw.key(accountId));
    });
    after(async () => {
      await gw.close();
      await upstream.close();
    });

    const chat = (body: Record<string, unknown>, key = secret) =>
      fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: TEST_MODEL, ...body }),
      });
    const say = (text: string) => [{ role: "user" as const, content: text }];
    const record = async (res: Response): Promise<CallRecordsTable> => {
      const id = res.headers.get("x-request-id");
      assert.ok(id, "x-request-id");
      return gw.record(id);
    };

    test("rule 1: safety on and stream true: one JSON body, object chat.completion, and a header saying so", async () => {
      const res = await chat({
        messages: say("hi mock:tokens=6"),
        stream: true,
        stream_options: { include_usage: true },
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(res.headers.get("x-content-safety"), "on");
      assert.equal(res.headers.get("x-content-safety-stream"), "json");
      const body = (await res.json()) as ChatCompletion;
      assert.equal(body.object, "chat.completion");
      assert.equal(body.choices[0]!.message.content, "Hello world this is a mock");
      assert.equal(body.choices[0]!.finish_reason, "stop");
      assert.equal(body.usage!.completion_tokens, 6);
      assert.equal(body.model, TEST_MODEL);
      // the upstream was asked for one answer, not a stream
      assert.notEqual(upstream.requests.at(-1)!.body.stream, true);
      const row = await record(res);
      assert.equal(row.status, "ok");
      assert.equal(row.stream, 1);
      assert.equal(row.safety_mode, "json");
      assert.equal(row.safety_verdict, "pass");
      assert.equal(row.safety_categories, null);
      assert.ok(row.safety_ms !== null && Number(row.safety_ms) >= 0);
      assert.equal(Number(row.total_tokens), body.usage!.total_tokens);
    });

    test("rule 2: safety off (plan override) and stream true: SSE chunks of chat.completion.chunk", async () => {
      const open = await gw.account("open-account", { plan: "open" });
      const { secret: openKey } = await gw.key(open);
      const res = await chat({ messages: say("hi mock:tokens=3"), stream: true }, openKey);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      assert.equal(res.headers.get("x-content-safety"), null);
      const stream = parseStream(await res.text());
      assert.ok(stream.done);
      assert.ok(stream.events.every((e) => e.object === "chat.completion.chunk"));
      assert.deepEqual(stream.contents.join(""), "Hello world this");
      const row = await record(res);
      assert.equal(row.safety_mode, null);
      assert.equal(row.safety_verdict, null);
    });

    test("rule 3: stream omitted is JSON, with safety on and off", async () => {
      const on = await chat({ messages: say("hi mock:tokens=2") });
      assert.match(on.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(on.headers.get("x-content-safety"), "on");
      assert.equal(on.headers.get("x-content-safety-stream"), null, "no stream was asked for");
      assert.equal(((await on.json()) as ChatCompletion).object, "chat.completion");
      assert.equal((await record(on)).safety_mode, "json");

      const off = await gw.account("off-by-account");
      await updateAccount(gw.gateway.deps.store.db, off, { safety: "off" });
      const { secret: offKey } = await gw.key(off);
      const res = await chat({ messages: say("hi mock:tokens=2") }, offKey);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(res.headers.get("x-content-safety"), null);
      assert.equal(((await res.json()) as ChatCompletion).object, "chat.completion");
    });

    test("the account override beats the plan: an account of the open plan set to on is reviewed", async () => {
      const acc = await gw.account("open-but-on", { plan: "open" });
      await updateAccount(gw.gateway.deps.store.db, acc, { safety: "on" });
      const { secret: k } = await gw.key(acc);
      const res = await chat({ messages: say(`mock:text=${BLOCKED} mock:tokens=3`), stream: true }, k);
      assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
      const body = (await res.json()) as ChatCompletion;
      assert.equal(body.choices[0]!.finish_reason, "content_filter");
      // and back to inherit: the plan's "off" applies again, once the cache sees the change
      await updateAccount(gw.gateway.deps.store.db, acc, { safety: null });
      await until(async () => {
        const again = await chat({ messages: say("mock:tokens=1"), stream: true }, k);
        await again.arrayBuffer();
        return (again.headers.get("content-type") ?? "").startsWith("text/event-stream");
      }, "the inherited setting to apply");
    });

    for (const stream of [false, true])
      test(`flagged output (stream ${stream}): 200, content_filter, no model text, verdict field, charged and recorded`, async () => {
        const before = await gw.recorded("key_id", keyId);
        const res = await chat({ messages: say(`please mock:text=${BLOCKED} mock:tokens=5`), stream });
        assert.equal(res.status, 200);
        const raw = await res.text();
        assert.ok(!raw.toLowerCase().includes(BLOCKED), "not one word of the model's text is in the body");
        const body = JSON.parse(raw);
        assert.equal(body.object, "chat.completion");
        assert.equal(body.choices[0].finish_reason, "content_filter");
        assert.equal(body.choices[0].message.content, withheldNotice(res.headers.get("x-request-id")!));
        assert.deepEqual(body.safety, { verdict: "flagged", stage: "output", categories: ["blocked_terms"] });
        assert.equal(body.usage.completion_tokens, 5, "the upstream's usage is reported");
        const row = await record(res);
        assert.equal(row.status, "content_filter");
        assert.equal(Number(row.http_status), 200);
        assert.equal(row.safety_verdict, "flagged");
        assert.deepEqual(JSON.parse(row.safety_categories!), ["blocked_terms"]);
        assert.equal(row.usage_source, "upstream");
        assert.equal(Number(row.total_tokens), body.usage.total_tokens);
        const after = await gw.recorded("key_id", keyId);
        assert.equal(after.tokens - before.tokens, body.usage.total_tokens, "the answer is charged");
        const key = await gw.gateway.deps.store.db
          .selectFrom("api_keys")
          .select("used_tokens")
          .where("id", "=", keyId)
          .executeTakeFirstOrThrow();
        assert.equal(Number(key.used_tokens), after.tokens, "the key's counter adds up to its records");
      });

    test("every text the model returns is reviewed: a tool call's name and a refusal", async () => {
      const tool = await chat({ messages: say("weather? mock:tool") });
      const toolBody: any = await tool.json();
      assert.equal(toolBody.choices[0].finish_reason, "content_filter");
      assert.equal(toolBody.choices[0].message.tool_calls, undefined, "no tool call leaks");
      assert.ok(!JSON.stringify(toolBody).includes("Paris"));
      const refusal = await chat({ messages: say("mock:refusal") });
      const refusalBody: any = await refusal.json();
      assert.equal(refusalBody.choices[0].finish_reason, "content_filter");
      assert.ok(!JSON.stringify(refusalBody).includes("help with that"));
    });

    test("the rules see through case, width, zero-width and separator tricks", async () => {
      for (const disguise of [
        "FORBIDDEN",
        "ｆｏｒｂｉｄｄｅｎ",
        "for\u200bbid\u200bden",
        "f.o.r.b.i.d.d.e.n",
      ]) {
        const res = await chat({ messages: say(`mock:text=${disguise} mock:tokens=2`) });
        const body: any = await res.json();
        assert.equal(body.choices[0].finish_reason, "content_filter", `"${disguise}" is caught`);
      }
      const pattern = await chat({ messages: say("mock:text=card mock:tokens=1") });
      assert.equal(
        ((await pattern.json()) as ChatCompletion).choices[0]!.finish_reason,
        "stop",
        "one word of a pattern is not a match",
      );
    });

    test("the openai SDK: stream false always works; stream true gets JSON it must detect", async () => {
      const client = new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
      const plain = await client.chat.completions.create({
        model: TEST_MODEL,
        messages: say("hi mock:tokens=4"),
      });
      assert.equal(plain.object, "chat.completion");
      assert.equal(plain.choices[0]!.message.content, "Hello world this is");

      // What docs/content-safety.md tells SDK users who want streams when safety may be on: take the raw
      // response and look at its content type.
      const response = await client.chat.completions
        .create({ model: TEST_MODEL, messages: say("hi mock:tokens=3"), stream: true })
        .asResponse();
      assert.equal(response.headers.get("x-content-safety-stream"), "json");
      const text = await answerText(response);
      assert.equal(text, "Hello world this");

      const flagged = await client.chat.completions.create({
        model: TEST_MODEL,
        messages: say(`mock:text=${BLOCKED} mock:tokens=2`),
      });
      assert.equal(flagged.choices[0]!.finish_reason, "content_filter");
      assert.deepEqual((flagged as unknown as { safety: unknown }).safety, {
        verdict: "flagged",
        stage: "output",
        categories: ["blocked_terms"],
      });
    });

    test("reviewed streaming (plan override): SSE of reviewed text, the record says which mode applied", async () => {
      const live = await gw.account("live-account", { plan: "live" });
      const { secret: liveKey } = await gw.key(live);
      const res = await chat({ messages: say("hi mock:tokens=12"), stream: true }, liveKey);
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      assert.equal(res.headers.get("x-content-safety-stream"), "reviewed");
      const stream = parseStream(await res.text());
      assert.ok(stream.done);
      assert.equal(stream.contents.join(""), "Hello world this is a mock reply from the model with some");
      assert.equal(stream.events.at(-1).choices[0].finish_reason, "stop");
      const row = await record(res);
      assert.equal(row.safety_mode, "reviewed");
      assert.equal(row.safety_verdict, "pass");
      assert.equal(row.status, "ok");

      const flagged = await chat(
        {
          messages: say(`mock:text=${BLOCKED} mock:tokens=40`),
          stream: true,
          stream_options: { include_usage: true },
        },
        liveKey,
      );
      const raw = await flagged.text();
      assert.ok(!raw.toLowerCase().includes(BLOCKED), "nothing of the flagged text was released");
      const events = parseStream(raw);
      assert.ok(events.done);
      const finish = events.events.find((e) => e.choices?.[0]?.finish_reason);
      assert.equal(finish.choices[0].finish_reason, "content_filter");
      assert.deepEqual(finish.safety.categories, ["blocked_terms"]);
      const usage = events.events.at(-1).usage;
      assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0, "the usage of what was generated");
      const flaggedRow = await record(flagged);
      assert.equal(flaggedRow.status, "content_filter");
      assert.equal(flaggedRow.safety_mode, "reviewed");
      assert.equal(Number(flaggedRow.total_tokens), usage.total_tokens);
    });

    test("reviewed streaming: a flag part way stops the stream after the passed segments", async () => {
      const live = await gw.account("live-late-flag", { plan: "live" });
      const { secret: liveKey } = await gw.key(live);
      const aborted = upstream.aborted();
      // the upstream stalls after 30 words, so only the gateway's stop can end its call
      const res = await chat(
        { messages: say("hi mock:tokens=64 mock:hang-after=30"), stream: true },
        liveKey,
      );
      const stream = parseStream(await res.text());
      const notice = `\n\n${withheldNotice(res.headers.get("x-request-id")!)}`;
      assert.equal(stream.contents.at(-1), notice, "the gateway's notice ends the text");
      const released = stream.contents.slice(0, -1).join("");
      assert.ok(released.length > 0, "the segments before the flag were released");
      assert.ok(MOCK_TEXT.startsWith(released), `released text is a prefix of the answer: "${released}"`);
      assert.ok(!released.includes(LATE_WORD), "the flagged segment was held back");
      assert.ok(!released.includes("words for"), "the unreviewed tail is held back with it");
      const finish = stream.events.find((e) => e.choices?.[0]?.finish_reason);
      assert.equal(finish.choices[0].finish_reason, "content_filter");
      assert.ok(stream.done);
      await until(() => upstream.aborted() > aborted, "the upstream call to be stopped");
      const row = await record(res);
      assert.equal(row.status, "content_filter");
      assert.equal(row.usage_source, "estimated", "the upstream was stopped before its usage");
      assert.ok(Number(row.completion_tokens) >= 16, "what the upstream generated is charged");
    });

    test("every answer safety shapes validates against OpenAI's schemas", async () => {
      const contract = loadContract();
      const asJson = await chat({ messages: say("hi mock:tokens=3"), stream: true });
      contract.assertValid("CreateChatCompletionResponse", await asJson.json(), "a stream answered as JSON");
      const flagged = await chat({ messages: say(`mock:text=${BLOCKED} mock:tokens=3`), stream: true });
      contract.assertValid("CreateChatCompletionResponse", await flagged.json(), "a withheld answer");
      const live = await gw.account("live-contract", { plan: "live" });
      const { secret: liveKey } = await gw.key(live);
      for (const text of ["hi mock:tokens=12", `mock:text=${BLOCKED} mock:tokens=6`]) {
        const res = await chat(
          { messages: say(text), stream: true, stream_options: { include_usage: true } },
          liveKey,
        );
        const stream = parseStream(await res.text());
        for (const [i, e] of stream.events.entries())
          contract.assertValid("CreateChatCompletionStreamResponse", e, `chunk ${i}`);
      }
    });

    test("metrics count reviews, flags by category and reviewer latency", async () => {
      const text = await (await fetch(`${gw.origin}/metrics`)).text();
      assert.match(
        text,
        /gateway_safety_reviews_total\{stage="output",reviewer="rules",outcome="pass"\} [1-9]/,
      );
      assert.match(
        text,
        /gateway_safety_reviews_total\{stage="output",reviewer="rules",outcome="flag"\} [1-9]/,
      );
      assert.match(text, /gateway_safety_flags_total\{stage="output",category="blocked_terms"\} [1-9]/);
      assert.match(
        text,
        /gateway_safety_review_duration_seconds_count\{reviewer="rules",outcome="pass"\} [1-9]/,
      );
    });

    test("GET /v1/models tells nothing about the reviewers", async () => {
      const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${secret}` } });
      const text = await res.text();
      assert.ok(!/rules|forbidden|blocked_terms|safety/i.test(text));
    });
  });

  describe(`content safety reviewing input (${store} store)`, await storeSuite(store), () => {
    let upstream: MockUpstream;
    let gw: TestGateway;
    let accountId: string;
    let key: { id: string; secret: string };

    before(async () => {
      upstream = await startMockUpstream({});
      gw = await startTestGateway({ upstream, store, config: safetyConfig(upstream, true) });
      accountId = await gw.account("input");
      key = await gw.key(accountId);
    });
    after(async () => {
      await gw.close();
      await upstream.close();
    });

    test("flagged input: 400 content_filter, nothing sent upstream, nothing charged, recorded", async () => {
      const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
      const sent = upstream.requests.length;
      let error: unknown;
      try {
        await client.chat.completions.create({
          model: TEST_MODEL,
          messages: [
            { role: "system", content: "be nice" },
            { role: "user", content: [{ type: "text", text: "what is my CARD \n  Number" }] },
          ],
        });
      } catch (err) {
        error = err;
      }
      assert.ok(error instanceof BadRequestError, `expected BadRequestError, got ${String(error)}`);
      assert.equal(error.code, "content_filter");
      assert.equal(error.param, "messages");
      assert.match(error.message, /blocked_terms/);
      assert.equal(upstream.requests.length, sent, "nothing reached the upstream");
      const row = await gw.record(error.requestID!);
      assert.equal(row.status, "content_filter");
      assert.equal(Number(row.http_status), 400);
      assert.equal(row.error_code, "content_filter");
      assert.equal(row.safety_verdict, "flagged");
      assert.equal(Number(row.total_tokens), 0);
      assert.deepEqual(await gw.recorded("key_id", key.id), { tokens: 0, calls: 1 });
      assert.equal(gw.gateway.deps.ledger.openReservations(), 0, "the reservation was released");
    });

    test("clean input passes both reviews and is answered", async () => {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi mock:tokens=2" }],
        }),
      });
      assert.equal(res.status, 200);
      const row = await gw.record(res.headers.get("x-request-id")!);
      assert.equal(row.safety_verdict, "pass");
      assert.equal(row.status, "ok");
    });
  });
}

/**
 * docs/content-safety.md's recipe for SDK users: ask for a stream, and read whichever answer came.
 * `x-content-safety-stream: json` (or a JSON content type) means one completion body.
 */
async function answerText(response: Response): Promise<string> {
  if ((response.headers.get("content-type") ?? "").startsWith("application/json")) {
    const completion = (await response.json()) as ChatCompletion;
    return completion.choices[0]!.message.content ?? "";
  }
  let text = "";
  for await (const chunk of Stream.fromSSEResponse<ChatCompletionChunk>(response, new AbortController()))
    text += chunk.choices[0]?.delta.content ?? "";
  return text;
}
