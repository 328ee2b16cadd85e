// Local counts are linear whatever the characters (the audit: 150,000 newlines froze the
// gateway for 12 s, 100,000 no-break spaces for 21 s), split where the pre-tokenizer splits,
// and made in steps short enough for the worker to take turns between them.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { prng } from "../../test/support/mixed-load.ts";
import {
  boundJob,
  countJob,
  countSteps,
  countText,
  isSpace,
  MAX_PIECE_CHARS,
  SEGMENT_CHARS,
  segments,
} from "./count.ts";

const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => String.fromCodePoint(from + i));

/** Unicode classes whose runs the pre-tokenizer may take as one piece, and mixes of them. */
const CLASSES: Record<string, string[]> = {
  "ASCII letters": range(0x61, 0x7a).concat(range(0x41, 0x5a)),
  "Latin, Greek, Cyrillic letters": range(0xc0, 0x17f).concat(range(0x391, 0x3c9), range(0x410, 0x44f)),
  digits: range(0x30, 0x39).concat(range(0x660, 0x669)),
  "ASCII spaces": [" "],
  newlines: ["\n", "\r\n", "\r"],
  "no-break spaces": ["\u00a0"],
  "whitespace of every kind": [
    " ",
    "\t",
    "\n",
    "\r",
    "\u00a0",
    "\u2009",
    "\u3000",
    "\u202f",
    "\u1680",
    "\ufeff",
  ],
  CJK: range(0x4e00, 0x9fff).concat(range(0x3041, 0x3096), range(0xac00, 0xd7a3)),
  emoji: range(0x1f300, 0x1f5ff).concat([
    "\u{1f468}\u200d\u{1f469}\u200d\u{1f467}",
    "\u{1f44d}\u{1f3fd}",
    "\u{1f1eb}\u{1f1f7}",
    "\u2764\ufe0f",
  ]),
  punctuation: [..."!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"].concat(["。", "，", "、", "！", "…", "—", "«", "»"]),
  "combining marks": range(0x300, 0x36f).concat(range(0x20d0, 0x20f0)),
  "letters with marks": range(0x61, 0x7a).concat(range(0x300, 0x36f)),
  "words and spaces": ["the ", "a", "word", " ", "\n", "\u00a0", "  ", "Über", "日本語", ". "],
};
CLASSES["all of them"] = Object.values(CLASSES).flat();

function text(chars: string[], length: number, seed: number): string {
  const next = prng(seed);
  const parts: string[] = [];
  let n = 0;
  while (n < length) {
    const c = chars[Math.floor(next() * chars.length)]!;
    parts.push(c);
    n += c.length;
  }
  return parts.join("");
}

/** This thread's CPU time in milliseconds while `work` runs: other processes' load does not count. */
function cpuMs(work: () => void): number {
  const before = process.threadCpuUsage();
  work();
  const used = process.threadCpuUsage(before);
  return (used.user + used.system) / 1000;
}

describe("countText", () => {
  it("reads whitespace as the pre-tokenizer's \\s does, code unit by code unit", () => {
    for (let c = 0; c <= 0xffff; c++)
      assert.equal(isSpace(c), /\s/.test(String.fromCharCode(c)), `U+${c.toString(16).padStart(4, "0")}`);
  });

  it("costs a bounded time per KB, whatever the characters (random strings of each Unicode class)", () => {
    // Generous on purpose (speed is the bench's to measure): linear counting costs 0.03-4 ms
    // of CPU per 1,024 characters on the machine this was written on, the worst being random
    // letters never seen before; counting a whole run as one piece cost 38 (newlines), 45
    // (spaces) and 224 (no-break spaces) ms per 1,024 at this length, and grows with it.
    const LENGTH = 128 * 1024;
    const MS_PER_K = 20;
    const seed = Date.now() % 100_000;
    countText("the tokenizer loads before anything is timed");
    for (const [name, chars] of Object.entries(CLASSES)) {
      const sample = text(chars, LENGTH, seed);
      let counted = 0;
      const ms = cpuMs(() => {
        counted = countText(sample);
      });
      assert.ok(counted > 0);
      const perK = (ms * 1024) / sample.length;
      assert.ok(
        perK <= MS_PER_K,
        `${name} (seed ${seed}): ${perK.toFixed(1)} ms per 1,024 characters, over ${MS_PER_K}`,
      );
    }
  });

  it("counts the audit's strings in milliseconds: 150,000 newlines, 100,000 and 32,768 no-break spaces", () => {
    countText("the tokenizer loads before anything is timed");
    for (const [sample, tokens] of [
      ["\n".repeat(150_000), 9_375],
      ["\u00a0".repeat(100_000), 12_500],
      ["\u00a0".repeat(32_768), 4_096],
      ["a".repeat(32_768), 4_096],
    ] as const) {
      let counted = 0;
      const ms = cpuMs(() => {
        counted = countText(sample);
      });
      assert.equal(counted, tokens);
      assert.ok(ms < 1_000, `${sample.length} × U+${sample.charCodeAt(0).toString(16)}: ${ms.toFixed(0)} ms`);
    }
  });

  it("cuts the text into segments that are short, hold no long run, and make up the text", () => {
    for (const [name, chars] of Object.entries(CLASSES))
      for (const seed of [3, 4]) {
        const sample = text(chars, 20_000, seed);
        const cut = [...segments(sample)];
        assert.equal(cut.join(""), sample, name);
        for (const segment of cut) {
          assert.ok(
            segment.length > 0 && segment.length <= SEGMENT_CHARS,
            `${name}: ${segment.length} characters`,
          );
          assert.ok(
            !new RegExp(`\\s{${MAX_PIECE_CHARS + 1}}|\\S{${MAX_PIECE_CHARS + 1}}`).test(segment),
            `${name}: a run longer than ${MAX_PIECE_CHARS} characters in one segment`,
          );
          // a surrogate pair is never cut in two
          assert.ok(!/^[\udc00-\udfff]/.test(segment) && !/[\ud800-\udbff]$/.test(segment), name);
        }
      }
  });

  it("counts what the whole text counts when no run is long: segments end where the pre-tokenizer cuts", () => {
    // gpt-tokenizer's own count of the whole text, not o200k.ts's
    const { countTokens } = createRequire(import.meta.url)("gpt-tokenizer") as typeof import("gpt-tokenizer");
    const plain = { disallowedSpecial: new Set<string>() };
    for (const seed of [5, 6, 7]) {
      const words = [
        "the",
        "Über",
        "naïve",
        "123",
        "4567",
        "don't",
        "日本語",
        "😀",
        "é",
        "x",
        "ABC",
        "e\u0301",
      ];
      const gaps = [" ", "  ", "\n", "\n\n", "\t", "\u00a0", ". ", ", ", "!\n", " (", ") ", "/"];
      const next = prng(seed);
      const pick = (list: string[]) => list[Math.floor(next() * list.length)]!;
      let sample = "";
      while (sample.length < 50_000) sample += pick(words) + pick(gaps);
      assert.ok([...segments(sample)].length > 10);
      assert.equal(countText(sample), countTokens(sample, plain), `seed ${seed}`);
    }
  });

  it("counts a job in steps of one segment, as countJob does at once", () => {
    const job = {
      messages: [
        { role: "system", content: "terse" },
        { role: "user", content: [{ type: "text", text: "\n".repeat(10_000) }, { type: "image_url" }] },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "1", function: { arguments: "x".repeat(5_000) } }],
        },
      ],
      extra: [{ type: "function", function: { name: "f" } }],
      text: "\u00a0".repeat(9_000),
    };
    const steps = countSteps(job);
    let n = 0;
    let step = steps.next();
    while (!step.done) {
      n++;
      step = steps.next();
    }
    assert.deepEqual(step.value, countJob(job));
    assert.ok(n >= (10_000 + 5_000 + 9_000) / SEGMENT_CHARS, `${n} steps`);
    const bound = boundJob(job);
    assert.ok(bound.prompt >= step.value.prompt && bound.completion >= step.value.completion);
  });
});
