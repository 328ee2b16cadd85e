import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Chunk, Usage } from "../../domain/completion.ts";
import { Meter } from "./meter.ts";

async function* source(chunks: Chunk[]): AsyncGenerator<Chunk> {
  for (const c of chunks) yield c;
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

const chunk = (choices: Chunk["choices"], usage?: Usage): Chunk => ({
  object: "chat.completion.chunk",
  choices,
  ...(usage ? { usage } : {}),
});

const usage = (prompt: number, completion: number): Usage => ({
  prompt,
  completion,
  cachedInput: 0,
  cacheWrite: 0,
  reasoning: 0,
});

describe("Meter", () => {
  test("accumulates the text of every choice: content, refusal, tool-call names and arguments", async () => {
    const meter = new Meter();
    await collect(
      meter.pass(
        source([
          chunk([{ index: 0, delta: { role: "assistant", content: "Hel" }, finish_reason: null }]),
          chunk([
            { index: 0, delta: { content: "lo" }, finish_reason: null },
            { index: 1, delta: { refusal: "No." }, finish_reason: null },
          ]),
          chunk([
            {
              index: 2,
              delta: {
                tool_calls: [
                  {
                    index: 0,
                    id: "call_1",
                    type: "function",
                    function: { name: "get_weather", arguments: "" },
                  },
                  { index: 1, function: { name: "get_time", arguments: '{"tz":' } },
                ],
              },
              finish_reason: null,
            },
          ]),
          chunk([
            {
              index: 2,
              delta: { tool_calls: [{ index: 1, function: { arguments: '"UTC"}' } }] },
              finish_reason: null,
            },
          ]),
          chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
        ]),
      ),
    );
    assert.equal(meter.output.sample().text, 'HelloNo.get_weatherget_time{"tz":"UTC"}');
  });

  test("notes every choice index it sees, also from deltas without text", async () => {
    const meter = new Meter();
    await collect(
      meter.pass(
        source([
          chunk([{ index: 0, delta: { role: "assistant" }, finish_reason: null }]),
          chunk([{ index: 3, delta: {}, finish_reason: "length" }]),
          chunk([], usage(5, 2)),
        ]),
      ),
    );
    assert.deepEqual([...meter.choices].sort(), [0, 3]);
  });

  test("keeps the last usage reported; a later chunk without usage does not clear it", async () => {
    const meter = new Meter();
    assert.equal(meter.usage, undefined);
    const first = usage(10, 1);
    const last = usage(10, 7);
    await collect(
      meter.pass(
        source([
          chunk([{ index: 0, delta: { content: "a" }, finish_reason: null }], first),
          chunk([], last),
          chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
        ]),
      ),
    );
    assert.equal(meter.usage, last);
  });

  test("passes the same chunk objects through, unchanged and in order", async () => {
    const chunks = [
      chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]),
      chunk([{ index: 0, delta: { content: "x" }, finish_reason: null }]),
      chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
      chunk([], usage(1, 1)),
    ];
    const before = structuredClone(chunks);
    const out = await collect(new Meter().pass(source(chunks)));
    assert.equal(out.length, chunks.length);
    for (const [i, c] of out.entries()) assert.equal(c, chunks[i], `chunk ${i} is the upstream's object`);
    assert.deepEqual(chunks, before);
  });

  test("the upstream's early usage (usageSoFar) is noted and taken off the chunk; the end of the stream is noted", async () => {
    const meter = new Meter();
    const early = usage(29_015, 1);
    const first: Chunk = {
      ...chunk([{ index: 0, delta: { role: "assistant", content: "Hi" }, finish_reason: null }]),
      usageSoFar: early,
    };
    const it = meter.pass(source([first, chunk([], usage(29_015, 9))]));
    const out = await it.next();
    assert.equal(meter.usageSoFar, early);
    assert.equal(meter.reported, early, "reported: the early figures until a usage chunk comes");
    // no client may be shown it: the chat renderer serialises whole chunks
    assert.equal(JSON.stringify(out.value).includes("usageSoFar"), false);
    assert.equal(meter.ended, false);
    await collect({ [Symbol.asyncIterator]: () => it });
    assert.equal(meter.reported!.completion, 9, "then the latest usage chunk");
    assert.equal(meter.ended, true);
  });

  test("what passed before an upstream failure is noted, and the failure propagates", async () => {
    const meter = new Meter();
    const boom = new Error("upstream broke");
    async function* failing(): AsyncGenerator<Chunk> {
      yield chunk([{ index: 0, delta: { content: "partial " }, finish_reason: null }]);
      yield chunk([{ index: 1, delta: { content: "text" }, finish_reason: null }]);
      throw boom;
    }
    await assert.rejects(collect(meter.pass(failing())), (err) => err === boom);
    assert.equal(meter.output.sample().text, "partial text");
    assert.deepEqual([...meter.choices].sort(), [0, 1]);
  });
});
