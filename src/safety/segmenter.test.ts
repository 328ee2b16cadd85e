import assert from "node:assert/strict";
import { test } from "node:test";
import { Segmenter } from "./segmenter.ts";

test("a segment ends at a sentence end once it is long enough", () => {
  const s = new Segmenter(64);
  assert.equal(s.ready("Hi."), false, "too short to be worth a review of its own");
  assert.equal(s.ready("This sentence is long enough to stand alone."), true);
  assert.equal(s.ready("This sentence is long enough to stand alone. "), true, "trailing space");
  assert.equal(s.ready('He said "this is long enough to stand alone."'), true, "closing quote");
  assert.equal(s.ready("A question that is long enough to stand?"), true);
  assert.equal(s.ready("这是一个足够长的中文句子，它应该被当作一个完整的段落来审核。"), true);
  assert.equal(s.ready("Not yet at the end of this sentence, which"), false);
});

test("a line end closes a segment whatever its length", () => {
  const s = new Segmenter(64);
  assert.equal(s.ready("- item\n"), true);
  assert.equal(s.ready("- item\n  "), true);
});

test("a long stretch without a sentence end is cut at about segment_tokens tokens", () => {
  const s = new Segmenter(8); // about 32 characters
  assert.equal(s.ready("a".repeat(31)), false);
  assert.equal(s.ready("a".repeat(32)), true);
});
