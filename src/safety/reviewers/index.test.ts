import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type MockModeration, startMockModeration } from "../../../test/support/mock-moderation.ts";
import { type MockUpstream, startMockUpstream } from "../../../test/support/mock-openai-upstream.ts";
import { configSchema } from "../../config/cross-check.ts";
import { type ReviewerConfig, reviewerSchema } from "../../config/schema.ts";
import { Registry } from "../../models/registry.ts";
import { ReviewerError } from "../types.ts";
import { buildReviewers, closeReviewers } from "./index.ts";

let upstream: MockUpstream;
let moderationServer: MockModeration;
let registry: Registry;

before(async () => {
  upstream = await startMockUpstream();
  moderationServer = await startMockModeration({ apiKey: "sk-mod-abcdef123456" });
  const config = configSchema.parse({
    providers: [{ id: "vllm", type: "openai-compatible", base_url: upstream.url }],
    models: [{ id: "guard", provider: "vllm", upstream_model: "llama-guard-3" }],
    plans: [{ id: "default", quota_tokens: 1000, models: [] }],
  });
  registry = new Registry(config, new Map(), {});
});

after(async () => {
  await registry.close();
  await Promise.all([upstream.close(), moderationServer.close()]);
});

const configs = (items: unknown[]): ReviewerConfig[] => items.map((item) => reviewerSchema.parse(item));

describe("buildReviewers", () => {
  test("builds the chain in the configured order, and each reviewer works", async () => {
    const reviewers = buildReviewers(
      configs([
        { type: "rules", terms: ["forbidden"], category: "terms" },
        { type: "moderation-api", base_url: moderationServer.url, api_key_env: "MOD_KEY" },
        { type: "model-judge", model: "guard" },
      ]),
      { registry, env: { MOD_KEY: "sk-mod-abcdef123456" } },
    );
    try {
      assert.deepEqual(
        reviewers.map((r) => r.type),
        ["rules", "moderation-api", "model-judge"],
      );
      const signal = new AbortController().signal;
      const verdicts = await Promise.all(
        ["f.o.r.b.i.d.d.e.n", "violent", "judgeunsafe"].map((text, i) =>
          reviewers[i]!.review({ text, stage: "input", signal }),
        ),
      );
      assert.deepEqual(verdicts, [
        { flagged: true, categories: ["terms"] },
        { flagged: true, categories: ["violence"] },
        { flagged: true, categories: ["S1: violent crimes"] },
      ]);
    } finally {
      await closeReviewers(reviewers);
    }
  });

  test("no reviewers configured: an empty chain", () => {
    assert.deepEqual(buildReviewers([], { registry, env: {} }), []);
  });

  test("a judge naming an unknown model is refused with a clear error", () => {
    assert.throws(
      () => buildReviewers(configs([{ type: "model-judge", model: "nope" }]), { registry, env: {} }),
      /safety\.reviewers\[0\] \(model-judge\): unknown model "nope"/,
    );
  });

  test("an unset or empty api_key_env is refused with a clear error", () => {
    const moderation = configs([
      { type: "rules", terms: ["x"] },
      { type: "moderation-api", base_url: moderationServer.url, api_key_env: "MOD_KEY" },
    ]);
    for (const env of [{}, { MOD_KEY: "" }])
      assert.throws(
        () => buildReviewers(moderation, { registry, env }),
        /safety\.reviewers\[1\] \(moderation-api\): the environment variable MOD_KEY \(api_key_env\) is not set/,
      );
  });

  test("a term that normalises to nothing is refused with a clear error", () => {
    assert.throws(
      () => buildReviewers(configs([{ type: "rules", terms: ["\u200B"] }]), { registry, env: {} }),
      /safety\.reviewers\[0\] \(rules\): the term .* is empty once normalised/,
    );
  });

  test("closeReviewers closes what holds connections and is safe for the rest", async () => {
    const reviewers = buildReviewers(
      configs([
        { type: "rules", terms: ["x"] },
        { type: "moderation-api", base_url: moderationServer.url },
        { type: "model-judge", model: "guard" },
      ]),
      { registry, env: {} },
    );
    await closeReviewers(reviewers);
    // a closed moderation reviewer can no longer send
    await assert.rejects(
      reviewers[1]!.review({ text: "hi", stage: "input", signal: new AbortController().signal }),
      ReviewerError,
    );
  });
});
