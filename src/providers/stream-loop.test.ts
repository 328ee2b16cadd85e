import assert from "node:assert/strict";
import { test } from "node:test";
import type { Chunk } from "../domain/completion.ts";
import { UpstreamError } from "../errors/upstream-error.ts";
import type { SseEvent } from "./sse-reader.ts";
import { type StreamReader, streamChunks } from "./stream-loop.ts";

const chunk = (content: string): Chunk => ({
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});

/** The events' contents as chunks, until an event says "end". */
function reader(): StreamReader & { read(data: unknown): Chunk[] } {
  return {
    done: false,
    read(data) {
      const { say } = data as { say: string };
      if (say === "end") (this as { done: boolean }).done = true;
      return [chunk(say)];
    },
  };
}

async function read(data: string[], r: StreamReader): Promise<string[]> {
  let opened = 0;
  const out: string[] = [];
  const chunks = streamChunks(async () => {
    opened++;
    return (async function* (): AsyncGenerator<SseEvent> {
      for (const d of data) yield { event: undefined, data: d };
    })();
  }, r);
  assert.equal(opened, 0, "nothing is opened before the first chunk is asked for");
  for await (const c of chunks) out.push(String(c.choices[0]?.delta.content));
  return out;
}

const say = (s: string) => JSON.stringify({ say: s });

test("the events after the end event are read but not handled", async () => {
  assert.deepEqual(await read([say("a"), say("end"), say("late")], reader()), ["a", "end"]);
});

test("an end marker that is not JSON ends the stream", async () => {
  const r = { ...reader(), done: undefined, endMarker: "[DONE]" };
  assert.deepEqual(await read([say("a"), "[DONE]", say("late")], r), ["a"]);
});

test("a body that ends before the end event broke off", async () => {
  await assert.rejects(read([say("a")], reader()), (err: unknown) => {
    assert.ok(err instanceof UpstreamError && err.failure === "network");
    return true;
  });
  await assert.rejects(read(["not json"], reader()), (err: unknown) => {
    assert.ok(err instanceof UpstreamError && err.failure === "malformed");
    return true;
  });
});

test("a reader without an end event handles every event and says at the end whether the answer is whole", async () => {
  const whole = { ...reader(), done: undefined, end: () => [chunk("last")] };
  assert.deepEqual(await read([say("a"), say("b")], whole), ["a", "b", "last"]);
  const broken = { ...reader(), done: undefined, end: () => undefined };
  await assert.rejects(read([say("a")], broken), UpstreamError);
});
