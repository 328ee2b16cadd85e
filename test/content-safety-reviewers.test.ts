// Content safety end to end with the networked reviewers: a mock moderation server speaking
// OpenAI's /v1/moderations format and a Llama Guard style judge model behind the mock upstream.
// Thresholds and categories, failing closed (error, garbage, timeout, unreachable), the proof
// that no byte of model output reaches the client before its review completed, and a client
// that leaves during a review.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import type { ConfigInput } from "../src/config/schema.ts";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockModeration, startMockModeration } from "./support/mock-moderation.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { parseStream, until } from "./support/stream-assertions.ts";

const MODERATION_KEY = "sk-moderation-secret-456";
const GUARD_MODEL = "llama-guard-3-8b";

function config(
  upstream: MockUpstream,
  reviewers: unknown[],
  extra: Record<string, unknown> = {},
): Partial<ConfigInput> {
  const base = testConfig(upstream);
  return {
    models: [...base.models!, { id: "guard", provider: "mock", upstream_model: GUARD_MODEL }],
    plans: [
      ...base.plans!,
      { id: "live", quota_tokens: 1_000_000_000, models: [TEST_MODEL], safety: { streaming: "reviewed" } },
    ],
    safety: { enabled: true, timeout_ms: 1_000, reviewers, ...extra } as ConfigInput["safety"],
  };
}

/** What the client saw of one call, with when its first response byte arrived. */
interface Observed {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  requestId: string;
  /** performance.now() when the status line arrived */
  firstByteAt: number;
  /** every body piece with when it arrived */
  pieces: { at: number; text: string }[];
}

/** A raw HTTP call, so the test knows exactly when each byte reached the client. */
function call(
  gw: TestGateway,
  key: string,
  body: Record<string, unknown>,
  abortWhen?: () => boolean,
): Promise<Observed> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${gw.baseURL}/chat/completions`);
    const req = httpRequest(
      url,
      { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" } },
      (res) => {
        const firstByteAt = performance.now();
        const pieces: Observed["pieces"] = [];
        res.setEncoding("utf8");
        res.on("data", (text: string) => pieces.push({ at: performance.now(), text }));
        res.on("end", () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: pieces.map((p) => p.text).join(""),
            requestId: String(res.headers["x-request-id"]),
            firstByteAt,
            pieces,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ model: TEST_MODEL, ...body }));
    if (abortWhen) {
      const timer = setInterval(() => {
        if (!abortWhen()) return;
        clearInterval(timer);
        req.destroy();
        resolve({ status: 0, headers: {}, body: "", requestId: "", firstByteAt: Number.NaN, pieces: [] });
      }, 5);
    }
  });
}

const say = (text: string) => [{ role: "user", content: text }];

describe("content safety with the moderation API reviewer", () => {
  let upstream: MockUpstream;
  let moderation: MockModeration;
  let gw: TestGateway;
  let accountId: string;
  let key: { id: string; secret: string };

  before(async () => {
    upstream = await startMockUpstream({});
    moderation = await startMockModeration({ apiKey: MODERATION_KEY });
    gw = await startTestGateway({
      upstream,
      config: config(
        upstream,
        [
          {
            type: "moderation-api",
            base_url: moderation.url,
            api_key_env: "MODERATION_KEY",
            thresholds: { violence: 0.5, hate: 0.9 },
          },
        ],
        { segment_tokens: 4 },
      ),
      env: { MODERATION_KEY },
    });
    accountId = await gw.account("moderated");
    key = await gw.key(accountId);
  });
  after(async () => {
    await gw.close();
    await moderation.close();
    await upstream.close();
  });

  test("the reviewer sends OpenAI's request format, with the key and the model's whole output", async () => {
    moderation.reset();
    const res = await call(gw, key.secret, { messages: say("hello mock:tokens=5") });
    assert.equal(res.status, 200);
    assert.equal(moderation.requests.length, 1);
    const sent = moderation.requests[0]!;
    assert.equal(sent.path, "/v1/moderations");
    assert.equal(sent.headers.authorization, `Bearer ${MODERATION_KEY}`);
    assert.equal(sent.body.model, "omni-moderation-latest");
    assert.match(JSON.stringify(sent.body.input), /Hello world this is a/);
  });

  test("per-category thresholds decide; categories without one follow the server", async () => {
    const cases: [string, string | null][] = [
      ["violent", "violence"], // 0.92 >= 0.5
      ["borderline", null], // violence 0.35 < 0.5
      ["hateful", null], // hate 0.81: the server flags it, our threshold of 0.9 does not
      ["selfharm", "self-harm"], // no threshold: the server's flag applies
    ];
    for (const [word, category] of cases) {
      const res = await call(gw, key.secret, { messages: say(`mock:text=${word} mock:tokens=3`) });
      const body = JSON.parse(res.body);
      if (category === null) assert.equal(body.choices[0].finish_reason, "stop", `${word} passes`);
      else {
        assert.equal(body.choices[0].finish_reason, "content_filter", `${word} is flagged`);
        assert.deepEqual(body.safety.categories, [category]);
        assert.ok(!res.body.includes(word));
        const row = await gw.record(res.requestId);
        assert.deepEqual(JSON.parse(row.safety_categories!), [category]);
      }
    }
  });

  for (const [trigger, what] of [
    ["modfail", "a reviewer error"],
    ["modgarbage", "an answer that is not JSON"],
    ["modhang", "a review past timeout_ms"],
  ] as const)
    test(`fails closed on ${what}: 503, no model output, nothing charged, the upstream's usage recorded as uncharged`, async () => {
      const before = await gw.recorded("key_id", key.id);
      const res = await call(gw, key.secret, {
        messages: say(`mock:text=${trigger} mock:tokens=4`),
        stream: true,
      });
      assert.equal(res.status, 503);
      const body = JSON.parse(res.body);
      assert.equal(body.error.code, "safety_unavailable");
      assert.equal(body.error.type, "dev_gateway_error");
      assert.ok(!res.body.includes(trigger), "no model text in the error");
      assert.ok(!res.body.includes(MODERATION_KEY) && !res.body.includes(moderation.url));
      const row = await gw.record(res.requestId);
      assert.equal(row.status, "error");
      assert.equal(row.error_code, "safety_unavailable");
      assert.equal(Number(row.http_status), 503);
      assert.equal(row.safety_verdict, "error");
      assert.equal(row.usage_source, "upstream");
      assert.equal(Number(row.total_tokens), 0, "the gateway's own failure is not charged (issue #17)");
      assert.ok(Number(row.uncharged_tokens) > 0, "the upstream's work stays visible as the operator's cost");
      const after = await gw.recorded("key_id", key.id);
      assert.equal(after.tokens, before.tokens, "nothing charged to the key");
      assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
    });

  test("the hung review was abandoned, and no log line carries the moderation key", async () => {
    await until(() => moderation.inFlight() === 0, "the gateway to close the hung review");
    assert.ok(moderation.aborted() >= 1);
    assert.ok(!gw.logs.join("").includes(MODERATION_KEY));
    assert.match(gw.logs.join(""), /content safety review failed/);
  });

  test("no byte reaches the client before a slow review completed, and none of a flagged answer", async () => {
    for (const stream of [false, true]) {
      moderation.reset();
      const passed = await call(gw, key.secret, {
        messages: say("mock:text=modslow=400 mock:tokens=3"),
        stream,
      });
      assert.equal(passed.status, 200);
      const answered = moderation.requests[0]!.answeredAt;
      assert.ok(answered !== undefined, "the mock noted when it answered");
      assert.ok(passed.firstByteAt >= answered, "the response began only after the review answered");
      assert.match(JSON.parse(passed.body).choices[0].message.content, /modslow=400/);

      moderation.reset();
      const flagged = await call(gw, key.secret, {
        messages: say("mock:text=violent+modslow=400 mock:tokens=3"),
        stream,
      });
      assert.ok(flagged.firstByteAt >= moderation.requests[0]!.answeredAt!);
      assert.ok(!flagged.body.includes("violent"), "nothing of the flagged answer, ever");
      assert.equal(JSON.parse(flagged.body).choices[0].finish_reason, "content_filter");
    }
  });

  test("reviewed streaming: each released piece of text had passed a review that answered before it arrived", async () => {
    const live = await gw.account("live", { plan: "live" });
    const { secret } = await gw.key(live);
    moderation.reset();
    // 15 of the mock's words: no phrase repeats, so each review's text has one place in the answer
    const res = await call(gw, secret, { messages: say("hi mock:tokens=15"), stream: true });
    assert.equal(res.status, 200);
    const stream = parseStream(res.body);
    assert.ok(stream.done);
    const full = stream.contents.join("");
    // Each review's input ends where its segment ends in the full answer.
    const reviews = moderation.requests.map((r) => {
      const input = Array.isArray(r.body.input) ? r.body.input.join("") : String(r.body.input);
      const tail = input.slice(-40);
      return { answeredAt: r.answeredAt!, reviewedTo: full.indexOf(tail) + tail.length };
    });
    assert.ok(reviews.length >= 2, `several segments were reviewed (${reviews.length})`);
    let seen = "";
    for (const piece of res.pieces) {
      for (const event of parseEvents(piece.text))
        for (const c of event.choices ?? []) seen += c.delta?.content ?? "";
      const reviewedBefore = Math.max(
        0,
        ...reviews.filter((r) => r.answeredAt <= piece.at).map((r) => r.reviewedTo),
      );
      assert.ok(
        seen.length <= reviewedBefore,
        `${seen.length} characters arrived, ${reviewedBefore} were reviewed`,
      );
    }
  });

  test("a client that leaves during the review: recorded as client_disconnect, charged, the review abandoned", async () => {
    moderation.reset();
    const before = await gw.recorded("key_id", key.id);
    const gone = await call(
      gw,
      key.secret,
      { messages: say("mock:text=modhang mock:tokens=4") },
      () => moderation.inFlight() > 0,
    );
    assert.equal(gone.status, 0);
    await until(async () => (await gw.recorded("key_id", key.id)).calls === before.calls + 1, "the record");
    const row = await gw.gateway.deps.store.db
      .selectFrom("call_records")
      .selectAll()
      .where("key_id", "=", key.id)
      .orderBy("created_at", "desc")
      .executeTakeFirstOrThrow();
    assert.equal(row.status, "client_disconnect");
    assert.equal(row.usage_source, "upstream");
    assert.ok(Number(row.total_tokens) > 0, "the upstream's answer is charged");
    await until(() => moderation.inFlight() === 0, "the review to be abandoned");
    assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
  });
});

describe("content safety with the model judge and an unreachable reviewer", () => {
  let upstream: MockUpstream;
  let judged: TestGateway;
  let judgedInput: TestGateway;
  let down: TestGateway;
  let secret: string;
  let inputSecret: string;
  let downSecret: string;

  before(async () => {
    upstream = await startMockUpstream({});
    const judge = [{ type: "model-judge", model: "guard" }];
    judged = await startTestGateway({ upstream, config: config(upstream, judge) });
    ({ secret } = await judged.key(await judged.account("judged")));
    judgedInput = await startTestGateway({
      upstream,
      config: config(upstream, judge, { review_input: true }),
    });
    ({ secret: inputSecret } = await judgedInput.key(await judgedInput.account("judged-input")));
    // a moderation server that is not there: nothing listens on port 9 of loopback
    down = await startTestGateway({
      upstream,
      config: config(upstream, [{ type: "moderation-api", base_url: "http://127.0.0.1:9/v1" }]),
    });
    ({ secret: downSecret } = await down.key(await down.account("down")));
  });
  after(async () => {
    await judged.close();
    await judgedInput.close();
    await down.close();
    await upstream.close();
  });

  test("the judge reads the prompt, then the answer in its context, as Llama Guard expects", async () => {
    upstream.reset();
    const res = await call(judgedInput, inputSecret, { messages: say("tell me mock:tokens=3") });
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body).choices[0].finish_reason, "stop");
    const asked = upstream.requests.filter((r) => r.body.model === GUARD_MODEL);
    assert.equal(asked.length, 2, "the input and the output were judged");
    assert.deepEqual(asked[0]!.body.messages, [{ role: "user", content: "tell me mock:tokens=3\n" }]);
    assert.deepEqual(asked[1]!.body.messages, [
      { role: "user", content: "tell me mock:tokens=3" },
      { role: "assistant", content: "Hello world this\n" },
    ]);
    const row = await judgedInput.record(res.requestId);
    assert.equal(row.safety_verdict, "pass");
  });

  test("an unsafe prompt is refused before it reaches the model", async () => {
    upstream.reset();
    const res = await call(judgedInput, inputSecret, { messages: say("judgeunsafe please") });
    assert.equal(res.status, 400);
    const body = JSON.parse(res.body);
    assert.equal(body.error.code, "content_filter");
    assert.match(body.error.message, /S1: violent crimes/);
    assert.equal(upstream.requests.filter((r) => r.body.model !== GUARD_MODEL).length, 0);
  });

  test("unsafe answers are flagged with the Llama Guard categories", async () => {
    const one = await call(judged, secret, { messages: say("mock:text=judgeunsafe mock:tokens=2") });
    assert.equal(one.status, 200);
    const body = JSON.parse(one.body);
    assert.equal(body.choices[0].finish_reason, "content_filter");
    assert.deepEqual(body.safety.categories, ["S1: violent crimes"]);
    const two = JSON.parse(
      (await call(judged, secret, { messages: say("mock:text=judgetwo mock:tokens=2") })).body,
    );
    assert.deepEqual(two.safety.categories, ["S1: violent crimes", "S10: hate"]);
  });

  test("a judge answer that is not safe/unsafe, or a judge error, fails closed and charges nothing", async () => {
    for (const trigger of ["judgegarbage", "judgefail"]) {
      const res = await call(judged, secret, { messages: say(`mock:text=${trigger} mock:tokens=2`) });
      assert.equal(res.status, 503, trigger);
      assert.equal(JSON.parse(res.body).error.code, "safety_unavailable");
      assert.ok(!res.body.includes(trigger));
      const row = await judged.record(res.requestId);
      assert.equal(row.safety_verdict, "error");
      assert.equal(Number(row.total_tokens), 0, "the gateway's own failure is not charged");
      assert.ok(Number(row.uncharged_tokens) > 0, "the upstream's answer is the operator's cost");
    }
  });

  test("an unreachable moderation server fails closed", async () => {
    const res = await call(down, downSecret, { messages: say("hi mock:tokens=2") });
    assert.equal(res.status, 503);
    assert.equal(JSON.parse(res.body).error.code, "safety_unavailable");
    assert.ok(!res.body.includes("Hello"));
    assert.ok(!res.body.includes("127.0.0.1:9"));
  });
});

/** The JSON events in one piece of an SSE body (pieces may split events; whole ones suffice here). */
function parseEvents(text: string): any[] {
  const events: any[] = [];
  for (const line of text.split("\n"))
    if (line.startsWith("data: {"))
      try {
        events.push(JSON.parse(line.slice(6)));
      } catch {
        // an event split across pieces: counted with the next whole one
      }
  return events;
}
