// The compact o200k_base encoder against two others: tiktoken's own encodings of gpt-tokenizer's
// test plans (OpenAI's library made them), and gpt-tokenizer's encoder on random text of every
// script, whitespace and emoji the pre-tokenizer treats apart.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { prng } from "../../test/support/mixed-load.ts";
import { Encoder, o200k, Vocabulary } from "./o200k.ts";

const require = createRequire(import.meta.url);
const gpt = require("gpt-tokenizer") as typeof import("gpt-tokenizer");
const PLAIN = { disallowedSpecial: new Set<string>() };

describe("o200k_base", () => {
  it("reads the whole vocabulary: 199,998 tokens, each one's bytes found again at its rank", () => {
    const encoder = o200k();
    const vocabulary = new Vocabulary(
      readFileSync(require.resolve("gpt-tokenizer/data/o200k_base.tiktoken")),
    );
    assert.equal(vocabulary.size, 199_998);
    for (const rank of [0, 1, 255, 256, 1000, 100_000, 199_997]) {
      const bytes = vocabulary.bytes(rank);
      assert.equal(vocabulary.rank(bytes, 0, bytes.length), rank);
    }
    assert.equal(encoder.decode([24912]), gpt.decode([24912]));
    assert.throws(() => vocabulary.bytes(199_998), RangeError);
  });

  it("encodes tiktoken's test plans as tiktoken did", () => {
    const plans = readFileSync(require.resolve("gpt-tokenizer/data/TestPlans.txt"), "utf8").split("\n\n");
    let checked = 0;
    for (const plan of plans) {
      const m = plan.match(/^EncodingName: o200k_base\nSample: ([\s\S]*)\nEncoded: (\[.*\])/);
      if (!m) continue;
      const want = JSON.parse(m[2]!) as number[];
      assert.deepEqual(o200k().encode(m[1]!), want, JSON.stringify(m[1]));
      assert.equal(o200k().count(m[1]!), want.length);
      checked++;
    }
    assert.ok(checked >= 50, `only ${checked} o200k plans`);
  });

  it("encodes, counts and decodes random text as gpt-tokenizer does", () => {
    const pool = [
      "hello",
      " world",
      "Don't",
      "I'LL",
      "日本語",
      "テキスト",
      "😀",
      "🇪🇸",
      "🏳️‍🌈",
      "\n",
      "\r\n",
      " ",
      "  ",
      "\t",
      "123456",
      "٣٤٥",
      "über",
      "ÉCOLE",
      "a/b",
      "<|endoftext|>",
      '{"a":1}',
      "\u00a0",
      "—",
      "...",
      "Ωμέγα",
      "Привет",
      "e\u0301",
      "\u200d",
    ];
    const next = prng(11);
    const encoder = o200k();
    for (let k = 0; k < 3_000; k++) {
      let text = "";
      for (let i = 1 + Math.floor(next() * 30); i > 0; i--)
        text +=
          next() < 0.15
            ? String.fromCodePoint(0x20 + Math.floor(next() * 0x3000))
            : pool[Math.floor(next() * pool.length)];
      const want = gpt.encode(text, PLAIN);
      assert.deepEqual(encoder.encode(text), want, JSON.stringify(text));
      assert.equal(encoder.count(text), want.length);
      assert.equal(encoder.decode(want), text);
    }
  });

  it("merges a long piece of bytes no single token covers", () => {
    const next = prng(12);
    let letters = "";
    for (let i = 0; i < 2_000; i++) letters += String.fromCharCode(97 + Math.floor(next() * 26));
    assert.equal(o200k().count(letters), gpt.countTokens(letters, PLAIN));
    // a piece longer than the encoder's first buffer
    const wide = "日本".repeat(700);
    assert.equal(
      new Encoder(
        new Vocabulary(readFileSync(require.resolve("gpt-tokenizer/data/o200k_base.tiktoken"))),
      ).count(wide),
      gpt.countTokens(wide, PLAIN),
    );
  });

  it("refuses a vocabulary file that is not one", () => {
    assert.throws(() => new Vocabulary(Buffer.from("IQ== 0\nIg== 2\n")), /rank 2 where 1 was due/);
    assert.throws(() => new Vocabulary(Buffer.from("I*== 0\n")), /not base64/);
  });
});
