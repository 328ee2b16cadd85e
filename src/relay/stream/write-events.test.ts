import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SseEvent } from "../../apis/types.ts";
import type { StreamSink } from "../call.ts";
import { EventWriter } from "./write-events.ts";

/** A sink that logs each call; `hold(data)` makes the write of `data` wait until released. */
function fakeSink() {
  const calls: string[] = [];
  const held = new Map<string, () => void>();
  const sink: StreamSink = {
    start: () => void calls.push("start"),
    event(data, name) {
      calls.push(name ? `event ${name} ${data}` : `event ${data}`);
      if (!held.has(data)) return undefined;
      return new Promise<void>((resolve) => held.set(data, resolve));
    },
    comment: (text) => void calls.push(`comment ${text}`),
    end: () => void calls.push("end"),
  };
  return {
    sink,
    calls,
    hold: (data: string) => held.set(data, () => {}),
    release: (data: string) => held.get(data)!(),
  };
}

/** Lets every pending callback run (no time passes). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function* events(...items: string[]): AsyncGenerator<SseEvent> {
  for (const data of items) yield { data };
}

describe("EventWriter", () => {
  test("starts the response with the first write, once, and calls onStart once", async () => {
    const { sink, calls } = fakeSink();
    let starts = 0;
    const writer = new EventWriter(sink, () => starts++);
    assert.equal(writer.started, false);
    await writer.write({ data: "a" });
    await writer.write({ data: "b", event: "named" });
    writer.start();
    assert.equal(writer.started, true);
    assert.deepEqual(calls, ["start", "event a", "event named b"]);
    assert.equal(starts, 1);
  });

  test("writeAll writes the events in order", async () => {
    const { sink, calls } = fakeSink();
    await new EventWriter(sink, () => {}).writeAll(events("1", "2", "3"));
    assert.deepEqual(calls, ["start", "event 1", "event 2", "event 3"]);
  });

  test("backpressure: the next event is neither written nor read until the socket takes more", async () => {
    const { sink, calls, hold, release } = fakeSink();
    hold("a");
    const pulled: string[] = [];
    async function* upstream(): AsyncGenerator<SseEvent> {
      for (const e of ["a", "b"]) {
        pulled.push(e);
        yield { data: e };
      }
    }
    let done = false;
    const writing = new EventWriter(sink, () => {}).writeAll(upstream()).then(() => {
      done = true;
    });
    await settle();
    assert.deepEqual(calls, ["start", "event a"]);
    assert.deepEqual(pulled, ["a"], "nothing is read ahead while the socket is full");
    assert.equal(done, false);
    release("a");
    await writing;
    assert.deepEqual(calls, ["start", "event a", "event b"]);
  });

  test("writeEvents waits for each event to be taken; none writes nothing", async () => {
    const { sink, calls, hold, release } = fakeSink();
    const writer = new EventWriter(sink, () => {});
    await writer.writeEvents([]);
    assert.equal(writer.started, false, "no events: the response has not started");
    hold("a");
    const writing = writer.writeEvents([{ data: "a" }, { data: "[DONE]" }]);
    await settle();
    assert.deepEqual(calls, ["start", "event a"]);
    release("a");
    await writing;
    assert.deepEqual(calls, ["start", "event a", "event [DONE]"]);
  });

  test("end() ends after the last event", async () => {
    const { sink, calls } = fakeSink();
    const writer = new EventWriter(sink, () => {});
    await writer.write({ data: '{"error":{}}' });
    await writer.end();
    assert.deepEqual(calls, ["start", 'event {"error":{}}', "end"]);
  });

  test("ending a writer that never wrote starts the response first, without a first event", async () => {
    const { sink, calls } = fakeSink();
    let firstEvents = 0;
    const writer = new EventWriter(sink, () => firstEvents++);
    await writer.end();
    assert.equal(writer.started, true);
    assert.equal(firstEvents, 0);
    assert.deepEqual(calls, ["start", "end"]);
  });
});

describe("keep-alive", () => {
  test("a silence of keepAliveMs starts the response with a comment, without counting as the first event", async () => {
    const { sink, calls } = fakeSink();
    let firstEvents = 0;
    const writer = new EventWriter(sink, () => firstEvents++, 20);
    await new Promise((resolve) => setTimeout(resolve, 70));
    assert.equal(calls[0], "start");
    assert.ok(calls.filter((c) => c === "comment keep-alive").length >= 2, calls.join(", "));
    assert.ok(writer.started, "a failure from now on is a mid-stream error");
    assert.equal(firstEvents, 0, "the time to first token is not the keep-alive's");
    await writer.end();
    const after = calls.length;
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(calls.length, after, "no comment after the end");
  });

  test("dispose() before anything was written leaves the response unstarted", async () => {
    const { sink, calls } = fakeSink();
    const writer = new EventWriter(sink, () => {}, 20);
    writer.dispose();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(calls, []);
    assert.equal(writer.started, false);
  });
});
