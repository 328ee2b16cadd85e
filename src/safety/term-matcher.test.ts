import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { normalizeForReview } from "./normalize.ts";
import { TermMatcher } from "./term-matcher.ts";

function finds(terms: string[], text: string): string | undefined {
  return new TermMatcher(terms).find(normalizeForReview(text));
}

function assertMatches(term: string, texts: string[]): void {
  const matcher = new TermMatcher([term]);
  for (const text of texts)
    assert.equal(
      matcher.find(normalizeForReview(text)),
      term,
      `${JSON.stringify(term)} in ${JSON.stringify(text)}`,
    );
}

function assertNoMatch(term: string, texts: string[]): void {
  const matcher = new TermMatcher([term]);
  for (const text of texts)
    assert.equal(
      matcher.find(normalizeForReview(text)),
      undefined,
      `${JSON.stringify(term)} must not match ${JSON.stringify(text)}`,
    );
}

describe("TermMatcher", () => {
  test("a term matches as a whole word, anywhere, whatever its case", () => {
    assertMatches("bomb", ["bomb", "a bomb!", "BOMB.", "Bomb, then", "(bomb)", "the bomb", "x bomb\ny"]);
    assertNoMatch("bomb", ["bombs", "bombastic", "abomb", "a bombe", "boom", "bo mb", "b omb"]);
  });

  test("a term does not match inside or across ordinary words", () => {
    assertNoMatch("ass", [
      "class assignment",
      "assassin",
      "bass",
      "passing grade",
      "classic",
      "a ss",
      "as s",
      "glass asset",
    ]);
    assertMatches("ass", ["an ass", "ASS!", "kick-ass", "ass."]);
    // two ordinary words never join into a term
    assertNoMatch("anal", ["an al", "an Al Gore speech", "an alpaca", "banal"]);
    assertNoMatch("ahole", ["dig a hole", "a hole"]);
    assertNoMatch("therapist", ["the rapist"]);
  });

  test("spelled out: separators between single letters", () => {
    assertMatches("bomb", [
      "b.o.m.b",
      "b o m b",
      "b-o_m*b",
      "B-O-M-B",
      "b . o . m . b",
      "b\no\nm\nb",
      "b/o/m/b",
      "(b)(o)(m)(b)",
      "b💣o💣m💣b",
      "b…o…m…b",
      "Ｂ.Ｏ.Ｍ.Ｂ",
      "make a b o m b now",
      "a.b.o.m.b.s",
    ]);
  });

  test("invisible characters inside or around a term", () => {
    assertMatches("bomb", [
      "b\u200Bomb",
      "bo\u00ADmb",
      "b\u200Bo\u200Bm\u200Bb",
      "\uFEFFbomb\u200D",
      "hello\u200Bbomb",
      "b\u2063o m\u200Cb",
    ]);
    assertNoMatch("ass", ["class\u200Bignment", "cl\u200Bassy"]);
  });

  test("accents, width, look-alikes and combinations of tricks", () => {
    assertMatches("bomb", [
      "bómb",
      "ＢＯＭＢ",
      "bоmb", // Cyrillic о
      "b.о.m.b", // Cyrillic о, spelled out
      "В О M B", // Cyrillic В and О
      "𝐛-𝐨-𝐦-𝐛",
      "b̸o̵m̶b̷",
      "Ⓑ\u200BⓄⓂⒷ",
    ]);
  });

  test("a phrase matches across any separators it has, and joined", () => {
    assertMatches("card number", [
      "card number",
      "card   number",
      "card-number",
      "card_number",
      "Card\nNumber",
      "cardnumber",
      "your credit card number is",
      "c a r d number",
    ]);
    assertNoMatch("card number", ["card numbers", "discard number", "card", "number", "card num ber"]);
    assertMatches("can't help", ["I can't help with that.", "I cant help", "can t help"]);
    assertMatches("get_weather", ["get_weather", "get weather", "GetWeather"]);
  });

  test("a term written with separators between its letters matches the word too", () => {
    assertMatches("b.o.m.b", ["bomb", "b o m b"]);
  });

  test("scripts written without spaces match as substrings", () => {
    assertMatches("炸弹", ["我要做一个炸弹", "炸 弹", "炸\u200B弹", "a炸弹b"]);
    assertMatches("ระเบิด", ["ฉันจะทำระเบิด"]);
    assertNoMatch("炸弹", ["炸药"]);
  });

  test("a Cyrillic term matches with Latin look-alikes mixed in, not in Latin text", () => {
    assertMatches("бомба", ["бомба", "бoмбa" /* Latin o and a */, "Б О М Б А"]);
    assertNoMatch("бомба", ["bomba"]);
  });

  test("symbols-only terms match as substrings of the normalised text", () => {
    assertMatches("💣", ["here 💣 now", "x💣x"]);
    assertNoMatch("💣", ["here 🔥 now"]);
  });

  test("several terms: the one found is reported", () => {
    assert.equal(finds(["alpha", "beta", "gamma"], "x beta y"), "beta");
    assert.equal(finds(["alpha", "beta"], "nothing here"), undefined);
    // one term a suffix of another: both still found on their own
    assert.equal(finds(["ass", "bass"], "the bass"), "bass");
    assert.equal(finds(["bass", "ass"], "an ass"), "ass");
  });

  test("a term that is empty once normalised is refused at construction", () => {
    assert.throws(() => new TermMatcher(["\u200B"]), /empty once normalised/);
    assert.throws(() => new TermMatcher(["   "]), /empty once normalised/);
  });

  test("no terms: nothing matches", () => {
    assert.equal(finds([], "bomb"), undefined);
    assert.equal(finds(["bomb"], ""), undefined);
  });

  test("long adversarial inputs complete (1 MB each)", () => {
    const matcher = new TermMatcher([
      "a".repeat(200),
      "a a a a a a a a b",
      "bomb",
      ...Array.from({ length: 500 }, (_, i) => `term${i} word${i}`),
    ]);
    const inputs = {
      "one long word": "a".repeat(1_000_000),
      "single letters": "a ".repeat(500_000),
      "invisible between every letter": "c\u200B".repeat(500_000),
      "near-misses crossing hard gaps": `${"a ".repeat(198)}aa `.repeat(2_500),
      "mixed scripts": "bоmx ".repeat(200_000),
      "unspaced script": "我要做一个".repeat(200_000),
      "combining marks": "e\u0301".repeat(500_000),
      "ordinary words": "class assignment ".repeat(60_000),
    };
    const results = Object.fromEntries(
      Object.entries(inputs).map(([name, text]) => [name, matcher.find(normalizeForReview(text)) ?? null]),
    );
    assert.deepEqual(results, {
      "one long word": null,
      "single letters": "a".repeat(200),
      "invisible between every letter": null,
      "near-misses crossing hard gaps": null,
      "mixed scripts": null,
      "unspaced script": null,
      "combining marks": null,
      "ordinary words": null,
    });
    // and a term at the very end of a long text is still found
    assert.equal(matcher.find(normalizeForReview(`${"x ".repeat(500_000)}b.o.m.b`)), "bomb");
  });
});
