// What a stream is charged: the upstream's figures whenever it reported any (a withheld or
// interrupted stream included), the local estimate only when it reported none.
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { parseChatRequest } from "../domain/chat-request.ts";
import type { Usage } from "../domain/completion.ts";
import { TextSample } from "../lib/streamed-text.ts";
import { CallDraft } from "../records/draft.ts";
import { estimator } from "../tokens/estimator.ts";
import { answerUsage, estimateUsage, noteStreamUsage } from "./usage.ts";

after(() => estimator.close());

const req = parseChatRequest({
  model: "m",
  messages: [{ role: "user", content: "Tell me about the harbour of Copenhagen, please." }],
});
const usage = (prompt: number, completion: number, extra: Partial<Usage> = {}): Usage => ({
  prompt,
  completion,
  cachedInput: 0,
  cacheWrite: 0,
  reasoning: 0,
  ...extra,
});
/** about twenty tokens of output, whatever the tokenizer */
const TEXT = "The harbour of Copenhagen is old and busy, with ferries, canals and warehouses.";
const RESERVED = 100_000;
/** what a meter keeps of a stream that produced `text` */
function output(text: string): TextSample {
  const sample = new TextSample();
  for (const word of text.split(/(?= )/)) sample.add(word);
  return sample;
}

async function charged(stream: Parameters<typeof noteStreamUsage>[1], reserved = RESERVED) {
  const draft = new CallDraft("req_test");
  await noteStreamUsage(draft, stream, req, reserved);
  return {
    prompt: draft.promptTokens,
    completion: draft.completionTokens,
    source: draft.usageSource,
    cached: draft.cachedTokens,
    cacheWrite: draft.cacheWriteTokens,
  };
}

describe("noteStreamUsage", () => {
  test("a whole stream is charged its final usage as reported", async () => {
    const final = usage(29_015, 12, { cachedInput: 20_000, cacheWrite: 15 });
    assert.deepEqual(
      await charged({ output: output(TEXT), usage: final, usageSoFar: usage(29_015, 1), ended: true }),
      {
        prompt: 29_015,
        completion: 12,
        source: "upstream",
        cached: 20_000,
        cacheWrite: 15,
      },
    );
  });

  test("a stream stopped after message_start: the upstream's prompt, and the larger output count", async () => {
    // "26,012 prompt tokens charged where the upstream's message_start said 29,015"
    const early = usage(29_015, 1, { cachedInput: 20_000, cacheWrite: 15 });
    const c = await charged({ output: output(TEXT), usage: undefined, usageSoFar: early, ended: false });
    assert.equal(c.prompt, 29_015, "the prompt the upstream counted, not a local estimate");
    assert.equal(c.cached, 20_000);
    assert.equal(c.cacheWrite, 15);
    assert.ok(c.completion > 1, `the text produced counts beyond message_start's 1 (${c.completion})`);
    assert.equal(c.source, "upstream");
  });

  test("usage chunks seen before the cut (a server reporting on every chunk) are the upstream's figures too", async () => {
    const c = await charged({
      output: output("Hi"),
      usage: usage(500, 40),
      usageSoFar: undefined,
      ended: false,
    });
    assert.deepEqual([c.prompt, c.completion, c.source], [500, 40, "upstream"]);
  });

  test("the estimated output never takes the charge past the reservation", async () => {
    const c = await charged(
      { output: output(TEXT), usage: undefined, usageSoFar: usage(995, 1), ended: false },
      1_000,
    );
    assert.equal(c.prompt, 995);
    assert.equal(c.completion, 5);
  });

  test("a long output is estimated from the sample the meter kept, scaled to its length", async () => {
    // 400 K characters: a sample of about 64 K of them is kept (src/lib/streamed-text.ts)
    const long = TEXT.repeat(Math.ceil(400_000 / TEXT.length));
    const whole = (await estimator.count({ text: long })).completion;
    const c = await charged({
      output: output(long),
      usage: undefined,
      usageSoFar: usage(10, 1),
      ended: false,
    });
    assert.ok(
      Math.abs(c.completion - whole) / whole < 0.02,
      `${c.completion} estimated, ${whole} counted whole`,
    );
    const e = await charged({ output: output(long), usage: undefined, usageSoFar: undefined, ended: true });
    assert.equal(e.source, "estimated");
    assert.ok(
      Math.abs(e.completion - whole) / whole < 0.02,
      `${e.completion} estimated, ${whole} counted whole`,
    );
  });

  test("nothing reported: the local estimate of the prompt and of the text produced", async () => {
    for (const ended of [true, false]) {
      const c = await charged({ output: output(TEXT), usage: undefined, usageSoFar: undefined, ended });
      assert.equal(c.source, "estimated");
      assert.ok(c.prompt > 5 && c.completion > 5, JSON.stringify(c));
    }
  });

  test("an estimate above what the call held is told as charged: capped at the hold, as its record is", async () => {
    const draft = new CallDraft("req_told");
    await estimateUsage(draft, req, TEXT);
    const estimated = draft.totalTokens;
    const held = estimated - 7;
    const told = answerUsage(draft, undefined, held);
    assert.equal(told.prompt + told.completion, held);
    assert.equal(draft.totalTokens, held, "the draft, and so the record, charges the same");
    const roomy = new CallDraft("req_roomy");
    await estimateUsage(roomy, req, TEXT);
    const whole = answerUsage(roomy, undefined, RESERVED);
    assert.equal(whole.prompt + whole.completion, estimated, "within the hold, the estimate as it is");
  });
});
