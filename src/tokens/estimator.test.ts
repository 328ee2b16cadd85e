import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { GatewayError } from "../errors/index.ts";
import { boundJob, countPromptTokens, countText } from "./count.ts";
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

/**
 * Text slow to count (random letters, no spaces: every piece merged byte by byte, about
 * 0.3 ms per 1,024 characters), different for each `seed`.
 */
function slowText(length: number, seed: number): string {
  let state = seed * 7919 + 1;
  // bytes, then one string: appending 3 million characters one by one took 1.6 s under load
  const letters = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) % 2147483648;
    letters[i] = 97 + (state % 26);
  }
  return letters.toString("latin1");
}

/** Settles with the time it took, or the error it was refused with. */
async function timed<T>(work: Promise<T>): Promise<{ value?: T; error?: unknown; at: number }> {
  const started = performance.now();
  try {
    return { value: await work, at: performance.now() - started };
  } catch (error) {
    return { error, at: performance.now() - started };
  }
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

  it("takes the accounts' counts in turns: one account's long counts do not hold up another's short one", async () => {
    const estimator = new TokenEstimator();
    const left = new AbortController();
    try {
      await estimator.count({ text: "the worker starts and loads the tokenizer" });
      // about a second each
      const long = [1, 2, 3].map((seed) =>
        timed(
          estimator.countOrRefuse({ text: slowText(300_000, seed) }, { account: "a", signal: left.signal }),
        ),
      );
      await sleep(50);
      const short = await timed(estimator.countOrRefuse({ text: "one word" }, { account: "b" }));
      assert.equal(short.value?.completion, countText("one word"));
      assert.ok(short.at < 1_000, `the short count waited ${short.at.toFixed(0)} ms`);
      assert.equal(estimator.queued, 3, "the long counts are all still under way");
      left.abort(new Error("the client left"));
      for (const { error, at } of await Promise.all(long)) {
        assert.equal((error as Error).message, "the client left");
        assert.ok(at > short.at);
      }
    } finally {
      await estimator.close();
    }
  });

  it("drops a count whose caller left, queued or between two of its turns, and takes the next at once", async () => {
    const estimator = new TokenEstimator();
    try {
      await estimator.count({ text: "the worker starts and loads the tokenizer" });
      // what one of the counts below takes when it runs to its end, on this machine under its
      // load now: the dropped ones must settle, and the next count start, well before that
      const full = (await timed(estimator.count({ text: slowText(3_000_000, 9) }))).at;
      const callers = [new AbortController(), new AbortController()];
      // about a second each on this machine, counted as a whole; made before any is timed, so
      // that the first one's time does not include making the second one's text
      const texts = [slowText(3_000_000, 10), slowText(3_000_000, 11)];
      const counts = callers.map((caller, i) =>
        timed(estimator.countOrRefuse({ text: texts[i]! }, { account: "a", signal: caller.signal })),
      );
      await sleep(100);
      for (const caller of callers) caller.abort(new Error("the client left"));
      for (const { error, at } of await Promise.all(counts)) {
        assert.equal((error as Error).message, "the client left");
        assert.ok(
          at < full / 2,
          `settled ${at.toFixed(0)} ms after it was queued (a whole count: ${full.toFixed(0)} ms)`,
        );
      }
      assert.equal(estimator.queued, 0);
      const next = await timed(estimator.countOrRefuse({ text: "one word" }, { account: "b" }));
      assert.equal(next.value?.completion, countText("one word"));
      assert.ok(
        next.at < full / 2,
        `the next count waited ${next.at.toFixed(0)} ms (a whole count: ${full.toFixed(0)} ms)`,
      );
      const gone = new AbortController();
      gone.abort(new Error("gone before"));
      await assert.rejects(estimator.countOrRefuse({ text: "x" }, { signal: gone.signal }), /gone before/);
      assert.equal(estimator.queued, 0, "nothing is queued for a caller already gone");
    } finally {
      await estimator.close();
    }
  });

  it("bounds each account's counts and all of them: count_tokens is refused, an estimate is its byte bound", async () => {
    const estimator = new TokenEstimator({ limits: { perAccount: 2, total: 4 } });
    const left = new AbortController();
    const queue = (account: string | undefined, seed: number) =>
      timed(estimator.countOrRefuse({ text: slowText(300_000, seed) }, { account, signal: left.signal }));
    const refusal = async (work: Promise<unknown>) => {
      const { error } = await timed(work);
      assert.ok(error instanceof GatewayError, String(error));
      return error;
    };
    try {
      const queued = [queue("a", 20), queue("a", 21)];
      const job = { messages: [{ role: "user", content: "count me\u00a0\u00a0" }], text: "日本語" };
      const full = await refusal(estimator.countOrRefuse(job, { account: "a" }));
      assert.equal(full.errorName, "count_queue_full");
      assert.equal(full.status, 429);
      assert.equal(full.headers?.["retry-after"], "1");
      assert.deepEqual(
        await estimator.count(job, { account: "a" }),
        boundJob(job),
        "an estimate is never refused",
      );
      // counts that name no account are bounded by the total only
      queued.push(queue(undefined, 22), queue(undefined, 23));
      assert.equal(estimator.queued, 4);
      const busy = await refusal(estimator.countOrRefuse(job, { account: "b" }));
      assert.equal(busy.errorName, "count_queue_busy");
      assert.equal(busy.status, 503);
      assert.equal(busy.headers?.["retry-after"], "1");
      assert.deepEqual(await estimator.count(job), boundJob(job));
      left.abort(new Error("done"));
      await Promise.all(queued);
      assert.equal(estimator.queued, 0);
      assert.deepEqual(await estimator.countOrRefuse(job, { account: "b" }), {
        prompt: countPromptTokens(job.messages),
        completion: countText(job.text),
      });
    } finally {
      await estimator.close();
    }
  });
});
