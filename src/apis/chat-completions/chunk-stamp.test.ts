import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Chunk, Usage } from "../../domain/completion.ts";
import { ChunkStamp, completionId } from "./chunk-stamp.ts";

async function* source(chunks: Chunk[]): AsyncGenerator<Chunk> {
  for (const c of chunks) yield c;
}

async function events(stamp: ChunkStamp, chunks: Chunk[], withUsage: boolean) {
  const out: Record<string, unknown>[] = [];
  for await (const e of stamp.events(source(chunks), withUsage)) out.push(JSON.parse(e));
  return out;
}

const STARTED = 1_700_000_123_456; // the call's start, in ms
const STARTED_S = 1_700_000_123;

const upstream = (fields: Partial<Chunk> & Pick<Chunk, "choices">): Chunk => ({
  id: "chatcmpl-upstream",
  object: "chat.completion.chunk",
  created: 1_753_357_673,
  model: "gpt-4.1-2025-04-14",
  ...fields,
});

const usage: Usage = {
  prompt: 19,
  completion: 238,
  cachedInput: 3,
  cacheWrite: 0,
  reasoning: 5,
  details: {
    prompt_tokens_details: { cached_tokens: 3, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 5 },
  },
};

describe("completionId", () => {
  test("is chatcmpl- and the request id without its prefix", () => {
    assert.equal(completionId("req_01HZX9ABC"), "chatcmpl-01HZX9ABC");
    assert.equal(completionId("req_a_b"), "chatcmpl-a_b");
  });

  test("a request id without a prefix is kept whole", () => {
    assert.equal(completionId("01HZX9ABC"), "chatcmpl-01HZX9ABC");
  });
});

describe("ChunkStamp", () => {
  test("every chunk carries our id, the public model and the upstream's first created", async () => {
    const stamp = new ChunkStamp("req_abc", "my-model", STARTED);
    const out = await events(
      stamp,
      [
        upstream({ choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }], created: 1000 }),
        // Ollama moves `created` along the stream; the answer keeps one
        upstream({
          id: "other",
          choices: [{ index: 0, delta: { content: "b" }, finish_reason: null }],
          created: 1012,
        }),
      ],
      false,
    );
    assert.equal(out.length, 2);
    for (const e of out) {
      assert.equal(e.id, "chatcmpl-abc");
      assert.equal(e.object, "chat.completion.chunk");
      assert.equal(e.model, "my-model");
      assert.equal(e.created, 1000);
    }
    assert.deepEqual(
      out.map((e) => (e.choices as { delta: { content: string } }[])[0]?.delta.content),
      ["a", "b"],
    );
  });

  test("without an upstream created, created is the call's start (in seconds), for every chunk", async () => {
    const stamp = new ChunkStamp("req_abc", "m", STARTED);
    const out = await events(
      stamp,
      [
        {
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }],
        },
        upstream({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], created: 42 }),
      ],
      false,
    );
    assert.deepEqual(
      out.map((e) => e.created),
      [STARTED_S, STARTED_S],
    );
  });

  test("a placeholder created of 0 (Azure's prompt-filter chunk) does not date the answer to 1970", async () => {
    const stamp = new ChunkStamp("req_abc", "m", STARTED);
    const out = await events(
      stamp,
      [
        upstream({ id: "", model: "", created: 0, choices: [] }),
        upstream({
          choices: [{ index: 0, delta: { content: "Capital" }, finish_reason: null }],
          created: 1762317021,
        }),
      ],
      true,
    );
    for (const e of out) assert.notEqual(e.created, 0);
  });

  test("without include_usage: usage is removed and usage-only chunks are dropped", async () => {
    const stamp = new ChunkStamp("req_abc", "m", STARTED);
    const out = await events(
      stamp,
      [
        upstream({ choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }] }),
        upstream({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage }),
        upstream({ choices: [], usage }),
      ],
      false,
    );
    assert.equal(out.length, 2);
    for (const e of out) assert.equal("usage" in e, false);
    assert.deepEqual(out[1]?.choices, [{ index: 0, delta: {}, finish_reason: "stop" }]);
  });

  test("with include_usage: usage is null on ordinary chunks and OpenAI's object on the usage chunk", async () => {
    const stamp = new ChunkStamp("req_abc", "m", STARTED);
    const out = await events(
      stamp,
      [
        upstream({ choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }] }),
        upstream({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
        upstream({ choices: [], usage }),
      ],
      true,
    );
    assert.equal(out.length, 3);
    assert.equal(out[0]?.usage, null);
    assert.equal(out[1]?.usage, null);
    assert.deepEqual(out[2]?.choices, []);
    assert.deepEqual(out[2]?.usage, {
      prompt_tokens: 19,
      completion_tokens: 238,
      total_tokens: 257,
      prompt_tokens_details: { cached_tokens: 3, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 5 },
    });
  });

  test("fields the stamp does not own pass through", async () => {
    const stamp = new ChunkStamp("req_abc", "m", STARTED);
    const [e] = await events(
      stamp,
      [
        upstream({
          system_fingerprint: "fp_51e1070cf2",
          choices: [
            { index: 0, delta: { content: "a" }, logprobs: null, finish_reason: null, stop_reason: null },
          ],
        }),
      ],
      false,
    );
    assert.equal(e?.system_fingerprint, "fp_51e1070cf2");
    assert.deepEqual(e?.choices, [
      { index: 0, delta: { content: "a" }, logprobs: null, finish_reason: null, stop_reason: null },
    ]);
  });

  test("event(): the gateway's own chunks belong to the same answer", async () => {
    const stamp = new ChunkStamp("req_abc", "m", STARTED);
    await events(
      stamp,
      [upstream({ choices: [{ index: 0, delta: {}, finish_reason: null }], created: 77 })],
      false,
    );
    const own = JSON.parse(
      stamp.event({
        choices: [{ index: 0, delta: {}, finish_reason: "content_filter" }],
        safety: { flagged: true },
      }),
    );
    assert.deepEqual(own, {
      id: "chatcmpl-abc",
      object: "chat.completion.chunk",
      created: 77,
      model: "m",
      choices: [{ index: 0, delta: {}, finish_reason: "content_filter" }],
      safety: { flagged: true },
    });
  });

  test("event() before any upstream chunk dates the answer at the call's start, and chunks follow it", async () => {
    const stamp = new ChunkStamp("req_abc", "m", STARTED);
    const own = JSON.parse(stamp.event({ choices: [], usage: { prompt_tokens: 1 } }));
    assert.equal(own.created, STARTED_S);
    const [later] = await events(
      stamp,
      [upstream({ choices: [{ index: 0, delta: {}, finish_reason: null }], created: 99 })],
      false,
    );
    assert.equal(later?.created, STARTED_S);
  });
});
