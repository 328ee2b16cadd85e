import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { countPromptTokens, countText } from "./count.ts";
import { TokenEstimator } from "./estimator.ts";

const messages = [
  { role: "system", content: "You are terse." },
  { role: "user", content: [{ type: "text", text: "Describe this picture." }, { type: "image_url" }] },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
  },
];
const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
const written = `Here is a long unspaced run: ${"ab".repeat(2_000)} and some prose after it.`;

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await sleep(10);
}

/** A worker script as a data: URL, for the ways a worker can fail. */
const script = (code: string) => new URL(`data:text/javascript,${encodeURIComponent(code)}`);

describe("TokenEstimator", () => {
  it("counts a prompt and a text as this thread's tokenizer does", async () => {
    const estimator = new TokenEstimator();
    try {
      const counted = await estimator.count({ messages, extra: tools, text: written });
      assert.deepEqual(counted, {
        prompt: countPromptTokens(messages, tools),
        completion: countText(written),
      });
      assert.ok(counted.prompt > 1_000, "the image part is counted at its fixed guess");
      assert.deepEqual(await estimator.count({ text: "" }), { prompt: 0, completion: 0 });
      assert.equal(estimator.running, true);
    } finally {
      await estimator.close();
    }
  });

  it("answers each of many counts in flight with its own", async () => {
    const estimator = new TokenEstimator();
    try {
      const texts = Array.from({ length: 40 }, (_, i) => "word ".repeat(i * 7));
      const counted = await Promise.all(texts.map((text) => estimator.count({ text })));
      assert.deepEqual(
        counted.map((c) => c.completion),
        texts.map((t) => countText(t)),
      );
    } finally {
      await estimator.close();
    }
  });

  it("counts here what cannot be sent to its thread, and owes nothing after", async () => {
    const estimator = new TokenEstimator();
    try {
      const extra = { schema: { type: "object" }, hook: () => "not data" };
      const counted = await estimator.count({ messages, extra, text: "written" });
      assert.deepEqual(counted, {
        prompt: countPromptTokens(messages, extra),
        completion: countText("written"),
      });
      assert.equal((await estimator.count({ text: "next" })).completion, countText("next"));
    } finally {
      await estimator.close();
    }
  });

  it("stops its worker when idle and starts one again for the next count", async () => {
    const estimator = new TokenEstimator({ idleMs: 50 });
    try {
      await estimator.count({ text: "first" });
      assert.equal(estimator.running, true);
      await until(() => !estimator.running);
      assert.equal(estimator.running, false, "the idle worker was stopped");
      assert.equal((await estimator.count({ text: "hello there" })).completion, countText("hello there"));
      assert.equal(estimator.running, true);
    } finally {
      await estimator.close();
    }
  });

  for (const [how, code] of [
    ["exits", "process.exit(3)"],
    ["throws as it starts", "throw new Error('broken worker')"],
    ["never answers and dies", "setTimeout(() => process.exit(1), 20)"],
  ] as const)
    it(`counts on this thread when its worker ${how}, then and after`, async () => {
      const estimator = new TokenEstimator({ script: script(code) });
      try {
        const [a, b] = await Promise.all([
          estimator.count({ messages, text: written }),
          estimator.count({ text: "second" }),
        ]);
        assert.deepEqual(a, {
          prompt: countPromptTokens(messages, undefined),
          completion: countText(written),
        });
        assert.equal(b.completion, countText("second"));
        assert.equal(estimator.running, false);
        assert.equal((await estimator.count({ text: "later" })).completion, countText("later"));
        assert.equal(estimator.running, false, "no worker is started after one failed");
      } finally {
        await estimator.close();
      }
    });

  it("settles the counts it owes when closed", async () => {
    // a worker that takes jobs and never answers
    const estimator = new TokenEstimator({
      script: script("import { parentPort } from 'node:worker_threads'; parentPort.on('message', () => {});"),
    });
    const owed = estimator.count({ text: "owed words" });
    await sleep(100);
    assert.equal(estimator.running, true, "the worker took the job and lives");
    await estimator.close();
    assert.equal((await owed).completion, countText("owed words"));
  });
});
