import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BLOCK_CHARS, FlatText, SAMPLE_BLOCKS, TextSample } from "./streamed-text.ts";

const words = (n: number) => Array.from({ length: n }, (_, i) => ` w${i % 1000}`);

describe("FlatText", () => {
  test("reads back what was added, in order", () => {
    const text = new FlatText();
    const pieces = words(1_000);
    for (const p of ["", ...pieces]) text.add(p);
    assert.equal(text.toString(), pieces.join(""));
    assert.equal(text.length, pieces.join("").length);
    text.add(" more");
    assert.equal(text.toString(), `${pieces.join("")} more`, "and goes on after a read");
  });
});

describe("TextSample", () => {
  test("keeps a text of up to SAMPLE_BLOCKS blocks whole", () => {
    const sample = new TextSample();
    const pieces = words(Math.floor((SAMPLE_BLOCKS * BLOCK_CHARS) / 5) - 10);
    for (const p of pieces) sample.add(p);
    assert.deepEqual(sample.sample(), { text: pieces.join(""), scale: 1 });
  });

  test("keeps evenly spaced blocks of a longer one, never more than SAMPLE_BLOCKS + 1 blocks, and its length", () => {
    const sample = new TextSample();
    let all = 0;
    // blocks numbered by their first piece: "<block index>|" then filler to the block's end
    for (let block = 0; block < 1_000; block++) {
      const head = `${block}|`;
      const filler = "x".repeat(BLOCK_CHARS - head.length);
      sample.add(head);
      sample.add(filler);
      all += BLOCK_CHARS;
      const { text, scale } = sample.sample();
      assert.ok(text.length <= (SAMPLE_BLOCKS + 1) * BLOCK_CHARS, `${text.length} characters kept`);
      assert.equal(Math.round(text.length * scale), all);
    }
    const kept = sample
      .sample()
      .text.split(/x+/)
      .filter(Boolean)
      .map((head) => Number(head.slice(0, -1)));
    const stride = kept[1]! - kept[0]!;
    assert.equal(kept[0], 0);
    assert.ok(
      kept.every((index, i) => index === i * stride),
      `evenly spaced: ${kept.join(", ")}`,
    );
    assert.ok(kept.at(-1)! + 2 * stride > 999, `to the end: ${kept.join(", ")}`);
  });
});
