import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { readSse, type SseEvent } from "./sse-reader.ts";

const encoder = new TextEncoder();

async function* chunks(pieces: (Uint8Array | string)[]): AsyncGenerator<Uint8Array | string> {
  for (const p of pieces) yield p;
}

async function read(pieces: (Uint8Array | string)[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readSse(chunks(pieces))) out.push(e);
  return out;
}

/** Every way of cutting the bytes in two, and the bytes one at a time. */
function splits(bytes: Uint8Array): Uint8Array[][] {
  const ways: Uint8Array[][] = [[bytes]];
  for (let i = 0; i <= bytes.length; i++) ways.push([bytes.subarray(0, i), bytes.subarray(i)]);
  for (let i = 1; i < bytes.length; i++)
    for (let j = i + 1; j < bytes.length; j += 7)
      ways.push([bytes.subarray(0, i), bytes.subarray(i, j), bytes.subarray(j)]);
  ways.push(Array.from(bytes, (b) => Uint8Array.of(b)));
  return ways;
}

async function assertEverySplit(text: string, expected: SseEvent[]): Promise<void> {
  const bytes = encoder.encode(text);
  for (const pieces of splits(bytes)) {
    const got = await read(pieces);
    assert.deepEqual(got, expected, `split into ${pieces.map((p) => p.length).join("+")} bytes`);
  }
}

const ev = (data: string, event?: string): SseEvent => ({ event, data });

describe("readSse", () => {
  test("OpenAI-style stream, split at every byte boundary", async () => {
    const text =
      'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n' +
      'data: {"choices":[{"delta":{"content":"lo"}}]}\n\n' +
      "data: [DONE]\n\n";
    await assertEverySplit(text, [
      ev('{"choices":[{"delta":{"content":"Hel"}}]}'),
      ev('{"choices":[{"delta":{"content":"lo"}}]}'),
      ev("[DONE]"),
    ]);
  });

  test("CRLF line endings, split at every byte boundary (also between CR and LF)", async () => {
    const text =
      "event: message\r\ndata: one\r\n\r\ndata: two\r\ndata: three\r\n\r\n: ping\r\n\r\ndata: [DONE]\r\n\r\n";
    await assertEverySplit(text, [ev("one", "message"), ev("two\nthree"), ev("[DONE]")]);
  });

  test("multi-line data is joined with \\n", async () => {
    await assertEverySplit("data: first\ndata: second\ndata:third\ndata: \n\n", [
      ev("first\nsecond\nthird\n"),
    ]);
  });

  test("only one space after the colon is stripped", async () => {
    assert.deepEqual(await read(["data:  two spaces\n\n", "data:none\n\n"]), [ev(" two spaces"), ev("none")]);
  });

  test("a data line with an empty value dispatches an empty string", async () => {
    assert.deepEqual(await read(["data:\n\n"]), [ev("")]);
  });

  test("comments, id and retry lines carry nothing and dispatch nothing on their own", async () => {
    await assertEverySplit(
      ": keep-alive\n\n:another comment\nid: 7\nretry: 1000\n\ndata: x\n: comment inside an event\ndata: y\n\n",
      [ev("x\ny")],
    );
  });

  test("blank lines without data dispatch nothing", async () => {
    assert.deepEqual(await read(["\n\n\n\r\n\n"]), []);
  });

  test("event names are reported and reset after each event", async () => {
    await assertEverySplit(
      'event: error\ndata: {"error":{}}\n\ndata: plain\n\nevent:  spaced \ndata: z\n\n',
      [ev('{"error":{}}', "error"), ev("plain"), ev("z", "spaced")],
    );
  });

  test("an event name without data is forgotten at the blank line", async () => {
    assert.deepEqual(await read(["event: lonely\n\ndata: next\n\n"]), [ev("next")]);
  });

  test("a trailing event without the blank line is still delivered", async () => {
    await assertEverySplit("data: a\n\ndata: last", [ev("a"), ev("last")]);
    await assertEverySplit("data: a\n\ndata: last\n", [ev("a"), ev("last")]);
    await assertEverySplit("data: a\n\nevent: end\ndata: b\ndata: c", [ev("a"), ev("b\nc", "end")]);
  });

  test("a trailing CRLF event without the blank line is delivered without its CR", async () => {
    await assertEverySplit("data: a\r\n\r\ndata: last\r\n", [ev("a"), ev("last")]);
  });

  test("a stream cut right after a CR (truncated CRLF) does not leak the CR into the data", async () => {
    assert.deepEqual(await read(["data: a\r\n\r\ndata: [DONE]\r"]), [ev("a"), ev("[DONE]")]);
  });

  test("a trailing non-data line is ignored", async () => {
    assert.deepEqual(await read(["data: a\n\n: trailing comment"]), [ev("a")]);
    assert.deepEqual(await read(["data: a\n\nevent: x"]), [ev("a")]);
  });

  test("multi-byte UTF-8 split across chunks is decoded intact", async () => {
    const text = 'data: {"content":"héllo wörld — 中文 😀🎉"}\n\ndata: ✓\n\n';
    await assertEverySplit(text, [ev('{"content":"héllo wörld — 中文 😀🎉"}'), ev("✓")]);
  });

  test("a 4-byte character split inside a trailing event is decoded intact", async () => {
    const bytes = encoder.encode("data: 😀");
    const cut = bytes.length - 2;
    assert.deepEqual(await read([bytes.subarray(0, cut), bytes.subarray(cut)]), [ev("😀")]);
  });

  test("string chunks are accepted as well as bytes", async () => {
    assert.deepEqual(await read(["da", "ta: x\n", "\ndata: y\n\n"]), [ev("x"), ev("y")]);
  });

  test("empty input yields nothing", async () => {
    assert.deepEqual(await read([]), []);
    assert.deepEqual(await read([new Uint8Array(0)]), []);
  });

  test("events are yielded as soon as their blank line arrives, before the stream ends", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    async function* body(): AsyncGenerator<Uint8Array> {
      yield encoder.encode("data: first\n\n");
      await gate;
      yield encoder.encode("data: second\n\n");
    }
    const it = readSse(body());
    const first = await it.next();
    assert.deepEqual(first, { done: false, value: ev("first") });
    release();
    assert.deepEqual(await it.next(), { done: false, value: ev("second") });
    assert.deepEqual(await it.next(), { done: true, value: undefined });
  });

  test("a large event spread over many chunks is reassembled", async () => {
    const payload = "x".repeat(100_000);
    const bytes = encoder.encode(`data: ${payload}\n\n`);
    const pieces: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += 1000) pieces.push(bytes.subarray(i, i + 1000));
    const got = await read(pieces);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.data, payload);
  });
});
