import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Chunk } from "../../domain/completion.ts";
import type { ReviewOutcome } from "../../safety/policy.ts";
import { REVIEW_OVERLAP_CHARS } from "../../safety/segmenter.ts";
import { ReviewGate } from "./review-gate.ts";

const PASS: ReviewOutcome = { flagged: false, categories: [], reviewer: null, ms: 0 };
const FLAG: ReviewOutcome = { flagged: true, categories: ["S1"], reviewer: "test", ms: 0 };

/** 10 tokens: a segment is due at 40 characters, or at a sentence end from 24. */
const SEGMENT_TOKENS = 10;

const text = (content: string, index = 0): Chunk => ({
  object: "chat.completion.chunk",
  choices: [{ index, delta: { content }, finish_reason: null }],
});
const finish: Chunk = {
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
};

/**
 * Runs the gate over `chunks`, logging in order each chunk the gate pulls from the upstream
 * ("pull N"), each review ("review"), and each chunk it releases ("out N").
 */
async function run(
  chunks: Chunk[],
  verdicts: (text: string, n: number) => ReviewOutcome | Promise<ReviewOutcome>,
) {
  const log: string[] = [];
  const reviews: string[] = [];
  let closed = false;
  async function* upstream(): AsyncGenerator<Chunk> {
    try {
      for (const [i, c] of chunks.entries()) {
        log.push(`pull ${i}`);
        yield c;
      }
    } finally {
      closed = true;
    }
  }
  const gate = new ReviewGate(async (t) => {
    log.push("review");
    reviews.push(t);
    return verdicts(t, reviews.length - 1);
  }, SEGMENT_TOKENS);
  const released: Chunk[] = [];
  for await (const c of gate.pass(upstream())) {
    log.push(`out ${chunks.indexOf(c)}`);
    released.push(c);
  }
  return { gate, log, reviews, released, closed };
}

describe("ReviewGate", () => {
  test("holds chunks until a sentence ends, then reviews and releases them together", async () => {
    const chunks = [text("The capital of Denmark "), text("is Copenhagen."), text(" It is"), finish];
    const { log, reviews, released } = await run(chunks, () => PASS);
    assert.deepEqual(log, [
      "pull 0",
      "pull 1",
      "review",
      "out 0",
      "out 1",
      "pull 2",
      "pull 3",
      "review",
      "out 2",
      "out 3",
    ]);
    assert.deepEqual(released, chunks);
    assert.equal(reviews[0], "The capital of Denmark is Copenhagen.");
  });

  test("a long stretch without a sentence end is reviewed once it reaches the segment size", async () => {
    const chunks = [text("a".repeat(25)), text("b".repeat(20)), text("c"), finish];
    const { log } = await run(chunks, () => PASS);
    assert.deepEqual(log.slice(0, 5), ["pull 0", "pull 1", "review", "out 0", "out 1"]);
  });

  test("each review sees the tail of what was released before it", async () => {
    const first = "The capital of Denmark is Copenhagen.";
    const { reviews } = await run([text(first), text(" Its harbour is old and busy."), finish], () => PASS);
    assert.equal(reviews.length, 2);
    assert.equal(reviews[1], `${first} Its harbour is old and busy.`);
  });

  test("the overlap is bounded to the last REVIEW_OVERLAP_CHARS released", async () => {
    // segments are due every 40 characters without a sentence end: release ~300 characters first
    const long = Array.from({ length: 8 }, (_, i) => text(`${String(i).repeat(39)} `));
    const chunks = [...long, text("The end."), finish];
    const { reviews } = await run(chunks, () => PASS);
    const released = long.map((c) => c.choices[0]?.delta.content).join("");
    const last = reviews.at(-1)!;
    assert.equal(last, `${released.slice(-REVIEW_OVERLAP_CHARS)}The end.`);
  });

  test("a flag stops releasing, sets `flagged` and stops reading the upstream", async () => {
    const chunks = [
      text("The capital of Denmark is Copenhagen."),
      text(" Here is something that gets flagged."),
      text(" More text that must never be read."),
      finish,
    ];
    const { gate, released, log, closed } = await run(chunks, (_t, n) => (n === 1 ? FLAG : PASS));
    assert.deepEqual(released, [chunks[0]]);
    assert.equal(gate.flagged, FLAG);
    assert.equal(log.includes("pull 2"), false, "nothing is read after the flag");
    assert.equal(closed, true, "the upstream iterator was returned");
  });

  test("what is held when the upstream ends is reviewed and released", async () => {
    const chunks = [text("no sentence end"), text(" here"), finish];
    const { gate, reviews, released } = await run(chunks, () => PASS);
    assert.deepEqual(reviews, ["no sentence end here"]);
    assert.deepEqual(released, chunks);
    assert.equal(gate.flagged, undefined);
  });

  test("a flag on what is held at the end releases none of it", async () => {
    const chunks = [text("The capital of Denmark is Copenhagen."), text(" and then"), finish];
    const { gate, released } = await run(chunks, (_t, n) => (n === 1 ? FLAG : PASS));
    assert.deepEqual(released, [chunks[0]]);
    assert.equal(gate.flagged, FLAG);
  });

  test("chunks without text (role, whitespace, finish, usage) are released without a review", async () => {
    const usageOnly: Chunk = {
      object: "chat.completion.chunk",
      choices: [],
      usage: { prompt: 3, completion: 0, cachedInput: 0, cacheWrite: 0, reasoning: 0 },
    };
    const chunks: Chunk[] = [
      {
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: { role: "assistant" }, finish_reason: null }],
      },
      text("  \n"),
      text("   "),
      finish,
      usageOnly,
    ];
    const { reviews, released } = await run(chunks, () => FLAG);
    assert.deepEqual(reviews, []);
    assert.deepEqual(released, chunks);
  });

  test("text of every choice is reviewed, tool-call arguments included", async () => {
    const toolCall: Chunk = {
      object: "chat.completion.chunk",
      choices: [
        {
          index: 1,
          delta: { tool_calls: [{ index: 0, function: { name: "send_email", arguments: '{"to":"x"}' } }] },
          finish_reason: null,
        },
      ],
    };
    const { reviews } = await run([text("Sure."), toolCall, finish], () => PASS);
    assert.deepEqual(reviews, ['Sure.send_email{"to":"x"}']);
  });

  test("a tool call is released whole: nothing after its first chunk goes out before the upstream ends and all passed", async () => {
    // A client runs what it gets (SDKs parse partial arguments leniently): half a command
    // released before a flag could run as a shorter, different one.
    const call = (args: string, first = false): Chunk => ({
      object: "chat.completion.chunk",
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              first
                ? { index: 0, id: "c1", type: "function", function: { name: "shell", arguments: args } }
                : { index: 0, function: { arguments: args } },
            ],
          },
          finish_reason: null,
        },
      ],
    });
    const chunks = [
      text("I will clean up the build folder now."),
      call('{"command":"rm -rf build', true),
      call(" && echo this is a long enough stretch to be reviewed"),
      call('"}'),
      finish,
    ];
    const passed = await run(chunks, () => PASS);
    assert.deepEqual(passed.released, chunks);
    assert.ok(passed.reviews.length >= 2, "the held call was still reviewed a stretch at a time");
    assert.deepEqual(passed.log.filter((l) => l.startsWith("out")).slice(1), [
      "out 1",
      "out 2",
      "out 3",
      "out 4",
    ]);
    assert.ok(
      passed.log.indexOf("out 1") > passed.log.indexOf("pull 4"),
      "released after the upstream ended",
    );

    const flagged = await run(chunks, (t) => (t.includes("echo") ? FLAG : PASS));
    assert.deepEqual(flagged.released, [chunks[0]], "none of the call went out");
    assert.equal(flagged.gate.flagged, FLAG);
    assert.equal(flagged.log.includes("pull 4"), false, "the flag stopped the upstream early");
  });

  test("a review that throws propagates, and nothing held is released", async () => {
    const failure = new Error("reviewer unavailable");
    const chunks = [text("The capital of Denmark is Copenhagen."), finish];
    const released: Chunk[] = [];
    async function* upstream(): AsyncGenerator<Chunk> {
      yield* chunks;
    }
    const gate = new ReviewGate(async () => {
      throw failure;
    }, SEGMENT_TOKENS);
    await assert.rejects(
      (async () => {
        for await (const c of gate.pass(upstream())) released.push(c);
      })(),
      (err) => err === failure,
    );
    assert.deepEqual(released, []);
    assert.equal(gate.flagged, undefined);
  });
});
