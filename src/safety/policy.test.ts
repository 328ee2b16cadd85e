import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { configSchema } from "../config/cross-check.ts";
import type { SafetyConfig } from "../config/schema.ts";
import { Metrics } from "../observability/metrics.ts";
import { ReviewFailed, SafetyPolicy, safetySettings } from "./policy.ts";
import type { Reviewer, ReviewRequest, ReviewVerdict } from "./types.ts";

const config = (overrides: Partial<SafetyConfig> = {}): SafetyConfig => ({
  enabled: true,
  review_input: false,
  timeout_ms: 1_000,
  streaming: "json",
  segment_tokens: 64,
  withheld_limit: { max: 5, window_ms: 60_000 },
  reviewers: [],
  ...overrides,
});

/** A reviewer of our own making: the policy's contract is what is under test here. */
function reviewer(
  type: Reviewer["type"],
  judge: (r: ReviewRequest) => Promise<ReviewVerdict> | ReviewVerdict,
): Reviewer & { seen: string[] } {
  const seen: string[] = [];
  return {
    type,
    seen,
    async review(r) {
      seen.push(r.text);
      return judge(r);
    },
  };
}

const pass = () => ({ flagged: false, categories: [] });

describe("SafetyPolicy.review", () => {
  test("runs the chain in order and stops at the first flag", async () => {
    const a = reviewer("rules", pass);
    const b = reviewer("moderation-api", () => ({ flagged: true, categories: ["violence"] }));
    const c = reviewer("model-judge", pass);
    const policy = new SafetyPolicy(config(), [a, b, c], new Metrics());
    const outcome = await policy.review("output", "some text", undefined, new AbortController().signal);
    assert.equal(outcome.flagged, true);
    assert.deepEqual(outcome.categories, ["violence"]);
    assert.equal(outcome.reviewer, "moderation-api");
    assert.deepEqual([a.seen.length, b.seen.length, c.seen.length], [1, 1, 0]);
  });

  test("passes when every reviewer passes; empty text is not sent to reviewers", async () => {
    const a = reviewer("rules", pass);
    const policy = new SafetyPolicy(config(), [a], new Metrics());
    assert.equal(
      (await policy.review("input", "fine", undefined, new AbortController().signal)).flagged,
      false,
    );
    assert.equal(
      (await policy.review("output", "  \n ", undefined, new AbortController().signal)).flagged,
      false,
    );
    assert.deepEqual(a.seen, ["fine"]);
  });

  test("a flag without categories reports the reviewer's type", async () => {
    const policy = new SafetyPolicy(
      config(),
      [reviewer("rules", () => ({ flagged: true, categories: [] }))],
      new Metrics(),
    );
    const outcome = await policy.review("output", "x", undefined, new AbortController().signal);
    assert.deepEqual(outcome.categories, ["rules"]);
  });

  test("a reviewer error fails closed with ReviewFailed", async () => {
    const policy = new SafetyPolicy(
      config(),
      [
        reviewer("moderation-api", () => {
          throw new Error("connection refused");
        }),
      ],
      new Metrics(),
    );
    await assert.rejects(
      policy.review("output", "x", undefined, new AbortController().signal),
      (err: unknown) => {
        assert.ok(err instanceof ReviewFailed);
        assert.match(err.message, /moderation-api reviewer failed: connection refused/);
        return true;
      },
    );
  });

  test("no reviewer configured fails closed", async () => {
    const policy = new SafetyPolicy(config(), [], new Metrics());
    await assert.rejects(policy.review("output", "x", undefined, new AbortController().signal), ReviewFailed);
  });

  test("a reviewer that ignores its signal is cut off at the timeout", async () => {
    let sawAbort = false;
    const stuck = reviewer("model-judge", (r) => {
      r.signal.addEventListener("abort", () => {
        sawAbort = true;
      });
      return new Promise<ReviewVerdict>(() => {}); // never settles
    });
    const policy = new SafetyPolicy(config({ timeout_ms: 50 }), [stuck], new Metrics());
    await assert.rejects(
      policy.review("output", "x", undefined, new AbortController().signal),
      (err: unknown) => {
        assert.ok(err instanceof ReviewFailed);
        assert.match(err.message, /longer than 50 ms/);
        return true;
      },
    );
    assert.ok(sawAbort, "the reviewer's signal was aborted");
  });

  test("a local reviewer runs without the deadline; a networked one after it still has it", async () => {
    const local = { ...reviewer("rules", pass), local: true };
    const stuck = reviewer("moderation-api", () => new Promise<ReviewVerdict>(() => {}));
    const policy = new SafetyPolicy(config({ timeout_ms: 50 }), [local, stuck], new Metrics());
    const client = new AbortController();
    await assert.rejects(policy.review("output", "x", undefined, client.signal), /longer than 50 ms/);
    assert.deepEqual(local.seen, ["x"]);
    const alone = new SafetyPolicy(
      config({ timeout_ms: 50 }),
      [{ ...reviewer("rules", pass), local: true }],
      new Metrics(),
    );
    assert.equal((await alone.review("output", "x", undefined, client.signal)).flagged, false);
  });

  test("the client leaving ends the review with the client's reason", async () => {
    const client = new AbortController();
    const slow = reviewer("moderation-api", () => new Promise<ReviewVerdict>(() => {}));
    const policy = new SafetyPolicy(config(), [slow], new Metrics());
    const review = policy.review("output", "x", undefined, client.signal);
    const gone = new Error("client gone");
    client.abort(gone);
    await assert.rejects(review, (err) => err === gone);
  });

  test("metrics count outcomes and flags", async () => {
    const metrics = new Metrics();
    const policy = new SafetyPolicy(
      config(),
      [reviewer("rules", (r) => ({ flagged: r.text === "bad", categories: ["x"] }))],
      metrics,
    );
    await policy.review("output", "good", undefined, new AbortController().signal);
    await policy.review("output", "bad", undefined, new AbortController().signal);
    const text = await metrics.registry.metrics();
    assert.match(text, /gateway_safety_reviews_total\{stage="output",reviewer="rules",outcome="pass"\} 1/);
    assert.match(text, /gateway_safety_reviews_total\{stage="output",reviewer="rules",outcome="flag"\} 1/);
    assert.match(text, /gateway_safety_flags_total\{stage="output",category="x"\} 1/);
  });
});

describe("safetySettings", () => {
  const parsed = configSchema.parse({
    providers: [{ id: "demo", type: "demo" }],
    models: [{ id: "demo", provider: "demo" }],
    plans: [
      { id: "plain", quota_tokens: 1, models: ["demo"] },
      { id: "strict", quota_tokens: 1, models: ["demo"], safety: { enabled: true, streaming: "reviewed" } },
      { id: "loose", quota_tokens: 1, models: ["demo"], safety: { enabled: false } },
    ],
    default_plan: "plain",
    safety: { enabled: true, reviewers: [{ type: "rules", terms: ["x"] }] },
  });
  const plan = (id: string) => parsed.plans.find((p) => p.id === id);
  const inherit = { safety: null, safety_streaming: null };

  test("the account wins over the plan, the plan over the global setting", () => {
    assert.deepEqual(safetySettings(parsed.safety, plan("plain"), inherit), {
      enabled: true,
      streaming: "json",
    });
    assert.deepEqual(safetySettings(parsed.safety, plan("strict"), inherit), {
      enabled: true,
      streaming: "reviewed",
    });
    assert.deepEqual(safetySettings(parsed.safety, plan("loose"), inherit), {
      enabled: false,
      streaming: "json",
    });
    assert.equal(
      safetySettings(parsed.safety, plan("loose"), { safety: "on", safety_streaming: null }).enabled,
      true,
    );
    assert.equal(
      safetySettings(parsed.safety, plan("strict"), { safety: "off", safety_streaming: null }).enabled,
      false,
    );
    assert.equal(
      safetySettings(parsed.safety, plan("strict"), { safety: null, safety_streaming: "json" }).streaming,
      "json",
    );
  });

  test("a call's settings say whether anyone chose the streaming mode: unchosen, agents' streams are reviewed", () => {
    const policy = (global: SafetyConfig) => new SafetyPolicy(global, [], new Metrics());
    const unset = policy(parsed.safety);
    assert.equal(parsed.safety.streaming, undefined, "the global setting has no default of its own");
    assert.deepEqual(unset.settings(inherit, plan("plain")), {
      enabled: true,
      streaming: "json",
      streamingChosen: false,
    });
    assert.equal(unset.settings(inherit, plan("strict")).streamingChosen, true, "by the plan");
    assert.equal(
      unset.settings({ safety: null, safety_streaming: "json" }, plan("plain")).streamingChosen,
      true,
      "by the account",
    );
    assert.equal(
      policy({ ...parsed.safety, streaming: "json" }).settings(inherit, plan("plain")).streamingChosen,
      true,
      "globally",
    );
  });

  test("the config refuses safety without a reviewer, and a judge naming an unknown model", () => {
    const base = {
      providers: [{ id: "demo", type: "demo" }],
      models: [{ id: "demo", provider: "demo" }],
      plans: [{ id: "default", quota_tokens: 1, models: ["demo"] }],
    };
    const noReviewer = configSchema.safeParse({ ...base, safety: { enabled: true } });
    assert.equal(noReviewer.success, false);
    assert.match(JSON.stringify(noReviewer.error!.issues), /at least one reviewer/);
    const planOnly = configSchema.safeParse({
      ...base,
      plans: [{ id: "default", quota_tokens: 1, models: ["demo"], safety: { enabled: true } }],
    });
    assert.equal(planOnly.success, false);
    const judge = configSchema.safeParse({
      ...base,
      safety: { reviewers: [{ type: "model-judge", model: "nope" }] },
    });
    assert.equal(judge.success, false);
    assert.match(JSON.stringify(judge.error!.issues), /unknown model \\"nope\\"/);
    const badPattern = configSchema.safeParse({
      ...base,
      safety: { reviewers: [{ type: "rules", patterns: ["("] }] },
    });
    assert.equal(badPattern.success, false);
    assert.match(JSON.stringify(badPattern.error!.issues), /not a valid regular expression/);
  });
});
