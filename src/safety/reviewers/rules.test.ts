import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { reviewerSchema } from "../../config/schema.ts";
import { ReviewerError, type ReviewRequest } from "../types.ts";
import { RulesReviewer } from "./rules.ts";

function rules(config: Record<string, unknown>): RulesReviewer {
  const parsed = reviewerSchema.parse({ type: "rules", ...config });
  if (parsed.type !== "rules") throw new Error("not a rules config");
  return new RulesReviewer(parsed);
}

function request(text: string, signal = new AbortController().signal): ReviewRequest {
  return { text, stage: "output", signal };
}

describe("RulesReviewer", () => {
  test("a term flags with the configured category; other text passes", async () => {
    const reviewer = rules({ terms: ["forbidden", "card number"], category: "blocked_terms" });
    assert.equal(reviewer.type, "rules");
    assert.deepEqual(await reviewer.review(request("this is F-O-R-B-I-D-D-E-N")), {
      flagged: true,
      categories: ["blocked_terms"],
    });
    assert.deepEqual(await reviewer.review(request("my card\u200B-number is")), {
      flagged: true,
      categories: ["blocked_terms"],
    });
    assert.deepEqual(await reviewer.review(request("nothing forbidding here, discard numbers")), {
      flagged: false,
      categories: [],
    });
  });

  test("the category defaults to rules", async () => {
    const verdict = await rules({ terms: ["bomb"] }).review(request("a bomb"));
    assert.deepEqual(verdict, { flagged: true, categories: ["rules"] });
  });

  test("patterns are matched case-insensitively against the normalised text", async () => {
    const reviewer = rules({ patterns: ["\\bcard number\\b", "\\d{4}-\\d{4}-\\d{4}-\\d{4}", "^secret"] });
    for (const text of [
      "CARD NUMBER",
      "card\u200B number", // invisible removed
      "cárd number", // accent removed
      "ｃａｒｄ number", // full width
      "pay 1234-5678-9012-3456 now",
      "pay １２３４-５６７８-９０１２-３４５６ now", // full-width digits
      "Secret plans",
      "\uFEFFsecret plans", // a BOM does not hide the start of the text
      "card   number", // a run of spaces is one space to a pattern
      "card\n\tnumber", // and so is a line break
    ])
      assert.equal((await reviewer.review(request(text))).flagged, true, JSON.stringify(text));
    for (const text of ["card numbers", "1234 5678", "top secret"])
      assert.equal((await reviewer.review(request(text))).flagged, false, JSON.stringify(text));
  });

  test("a Unicode pattern works on the normalised text", async () => {
    const reviewer = rules({ patterns: ["\\p{Script=Cyrillic}{3,}"] });
    assert.equal((await reviewer.review(request("привет"))).flagged, true);
    assert.equal((await reviewer.review(request("hello"))).flagged, false);
  });

  test("the same reviewer gives the same answer every time (no regex state between reviews)", async () => {
    const reviewer = rules({ patterns: ["bomb"] });
    for (let i = 0; i < 3; i++) assert.equal((await reviewer.review(request("bomb bomb"))).flagged, true);
  });

  test("terms and patterns together: either flags", async () => {
    const reviewer = rules({ terms: ["alpha"], patterns: ["beta\\d"], category: "x" });
    assert.equal((await reviewer.review(request("alpha"))).flagged, true);
    assert.equal((await reviewer.review(request("beta7"))).flagged, true);
    assert.equal((await reviewer.review(request("gamma"))).flagged, false);
  });

  test("empty text and an empty config pass", async () => {
    assert.deepEqual(await rules({ terms: ["bomb"] }).review(request("")), {
      flagged: false,
      categories: [],
    });
    assert.deepEqual(await rules({}).review(request("bomb")), { flagged: false, categories: [] });
  });

  test("an aborted review rejects with a ReviewerError", async () => {
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      rules({ terms: ["bomb"] }).review(request("bomb", controller.signal)),
      ReviewerError,
    );
  });

  test("a term that normalises to nothing is refused when the reviewer is built", () => {
    assert.throws(() => rules({ terms: ["ok", "\u200B"] }), /empty once normalised/);
  });

  test("a long text completes (1 MB)", async () => {
    const reviewer = rules({ terms: ["bomb", "card number"], patterns: ["needle\\d+"] });
    const hay = "lorem ipsum dolor sit amet ".repeat(40_000);
    assert.equal((await reviewer.review(request(hay))).flagged, false);
    assert.equal((await reviewer.review(request(`${hay} b o m b`))).flagged, true);
    assert.equal((await reviewer.review(request(`${hay} needle42`))).flagged, true);
  });
});
