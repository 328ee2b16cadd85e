// Content safety on the Gemini API, with the rules reviewer, on a Gemini upstream (native) and
// an OpenAI-compatible one (translated): a streamed request is a reviewed stream unless the
// operator chose JSON; flagged output is withheld as an ordinary turn (STOP) whose text is the
// gateway's notice, with the safety extension, charged; reviewed streaming holds back what a
// review flags and still ends with a finishing event the SDK reads; a flagged prompt is refused
// in Google's envelope.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ApiError, type GenerateContentResponse, GoogleGenAI } from "@google/genai";
import { withheldNotice } from "../src/safety/withheld.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { startMockGemini } from "./support/mock-gemini-upstream.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const KEYS = { MOCK_UPSTREAM_KEY: "sk-upstream-gemini-2", GEMINI_KEY: "AIzaGeminiSafety0123456789" };
const UPSTREAMS = [
  { model: "gemini-test", label: "Gemini upstream (native)" },
  { model: "gpt-test", label: "OpenAI-compatible upstream (translated)" },
] as const;

/** a word the rules reviewer blocks */
const BLOCKED = "forbidden";
/** the 7th of the mocks' reply words: an answer of 12 is flagged part way through */
const LATE_WORD = "from";

let gw: TestGateway;
let mocks: MockUpstream[];
let secret: string;
let jsonSecret: string;

before(async () => {
  const gemini = await startMockGemini({ apiKey: KEYS.GEMINI_KEY });
  const openai = await startMockUpstream({ apiKey: KEYS.MOCK_UPSTREAM_KEY });
  mocks = [gemini, openai];
  const models = UPSTREAMS.map((u) => u.model);
  gw = await startTestGateway({
    env: KEYS,
    config: {
      providers: [
        { id: "gem", type: "gemini", base_url: gemini.url, api_key_env: "GEMINI_KEY" },
        { id: "oai", type: "openai-compatible", base_url: openai.url, api_key_env: "MOCK_UPSTREAM_KEY" },
      ],
      models: [
        { id: "gemini-test", provider: "gem", upstream_model: "gemini-2.5-flash", max_output_tokens: 64 },
        { id: "gpt-test", provider: "oai", upstream_model: "mock-model", max_output_tokens: 64 },
      ],
      plans: [
        { id: "default", quota_tokens: 1_000_000_000, models },
        { id: "json", quota_tokens: 1_000_000_000, models, safety: { streaming: "json" as const } },
      ],
      safety: {
        enabled: true,
        review_input: true,
        timeout_ms: 5_000,
        segment_tokens: 4,
        withheld_limit: { max: 1_000 },
        reviewers: [
          { type: "rules" as const, terms: [BLOCKED, LATE_WORD, "card number"], category: "blocked_terms" },
        ],
      },
    },
  });
  secret = (await gw.key(await gw.account("gemini-safe"))).secret;
  jsonSecret = (await gw.key(await gw.account("gemini-json", { plan: "json" }))).secret;
});

after(async () => {
  await gw?.close();
  await Promise.all((mocks ?? []).map((m) => m.close()));
});

const client = (key = secret) => new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.origin } });

const stream = (model: string, text: string, key = secret) =>
  fetch(`${gw.origin}/v1beta/models/${model}:streamGenerateContent?alt=sse`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": key },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text }] }] }),
  });

/** The `data:` events of an SSE body. */
const events = (body: string) =>
  body
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => JSON.parse(e.slice(6)));

for (const { model, label } of UPSTREAMS) {
  describe(label, () => {
    test("a streamed request is a reviewed stream when nobody chose the mode; the SDK reads it", async () => {
      const res = await stream(model, "hi mock:tokens=3");
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-content-safety-stream"), "reviewed");
      const all = events(await res.text());
      assert.equal(all.at(-1).candidates[0].finishReason, "STOP");
      const row = await gw.record(res.headers.get("x-request-id")!);
      assert.equal(row.api, "gemini");
      assert.equal(row.safety_mode, "reviewed");
      assert.equal(row.safety_verdict, "pass");
      let text = "";
      for await (const chunk of await client().models.generateContentStream({
        model,
        contents: "again mock:tokens=3",
      }))
        text += chunk.text ?? "";
      assert.equal(text, "Hello world this");
    });

    test("flagged output is withheld: the notice as an ordinary turn, the safety extension, usage charged", async () => {
      const answer = await client().models.generateContent({ model, contents: "say it mock:tokens=12" });
      assert.equal(answer.text, withheldNotice(answer.responseId!));
      assert.equal(answer.candidates?.[0]?.finishReason, "STOP");
      assert.equal(answer.usageMetadata?.candidatesTokenCount, 12);
      const raw = await fetch(`${gw.origin}/v1beta/models/${model}:generateContent`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": secret },
        body: JSON.stringify({ contents: [{ parts: [{ text: "say it mock:tokens=12" }] }] }),
      });
      const body = (await raw.json()) as any;
      assert.deepEqual(body.safety, { verdict: "flagged", stage: "output", categories: ["blocked_terms"] });
      const row = await gw.record(raw.headers.get("x-request-id")!);
      assert.equal(row.status, "content_filter");
      assert.equal(Number(row.completion_tokens), 12);
    });

    test("reviewed streaming: a flag part way holds back the rest; the notice, then the finishing event", async () => {
      const res = await stream(model, "long mock:tokens=12");
      assert.equal(res.status, 200);
      const all = events(await res.text());
      const text = all
        .map((e) => (e.candidates?.[0]?.content?.parts ?? []).map((p: any) => p.text ?? "").join(""))
        .join("");
      assert.equal(text.includes(LATE_WORD), false, "the flagged segment never reached the client");
      assert.ok(text.endsWith(withheldNotice(res.headers.get("x-request-id")!)), "the notice ends the text");
      const last = all.at(-1);
      assert.equal(last.candidates[0].finishReason, "STOP");
      assert.deepEqual(last.safety.categories, ["blocked_terms"]);
      assert.ok(last.usageMetadata.promptTokenCount > 0);
      const row = await gw.record(res.headers.get("x-request-id")!);
      assert.equal(row.status, "content_filter");
      assert.equal(row.safety_mode, "reviewed");
      const chunks: GenerateContentResponse[] = [];
      for await (const chunk of await client().models.generateContentStream({
        model,
        contents: "long mock:tokens=12",
      }))
        chunks.push(chunk);
      assert.ok(
        chunks
          .map((c) => c.text ?? "")
          .join("")
          .includes("This gateway's content policy withheld"),
      );
    });

    test("streaming json, the operator's choice: the whole answer as one JSON body, reviewed first", async () => {
      const res = await stream(model, "hi mock:tokens=3", jsonSecret);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /^application\/json/);
      assert.equal(res.headers.get("x-content-safety-stream"), "json");
      const body = (await res.json()) as any;
      assert.equal(body.candidates[0].content.parts.at(-1).text, "Hello world this");
    });

    test("a flagged prompt is refused: 400 INVALID_ARGUMENT, reason CONTENT_FILTER, nothing sent upstream", async () => {
      const sent = mocks.reduce((n, m) => n + m.requests.length, 0);
      const err = await client()
        .models.generateContent({ model, contents: "my card number is 4111" })
        .then(
          () => assert.fail("the prompt should be refused"),
          (e: unknown) => e,
        );
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 400);
      const { error } = JSON.parse(err.message);
      assert.equal(error.status, "INVALID_ARGUMENT");
      assert.equal(error.details[0].reason, "CONTENT_FILTER");
      assert.equal(
        mocks.reduce((n, m) => n + m.requests.length, 0),
        sent,
      );
    });
  });
}
