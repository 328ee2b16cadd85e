// The SSE writer behind a streaming answer: raw Node response, `[event: …\n]data: …\n\n` framing, and
// backpressure (a slow client makes the relay wait instead of buffering the answer). A client
// that reads nothing for `stalledMs` is cut off, so it cannot hold a call (and its upstream
// connection) open forever; the relay then ends the call as for a disconnect.
//
// The events of one turn of the event loop already leave in one write(2): Node's response
// corks its socket at a turn's first write and uncorks it on process.nextTick, after the
// promise jobs that carry the events through the relay. Corking the response here would undo
// that: its uncork writes what it buffered piece by piece (measured: 23 writes for 20 events;
// sse.test.ts checks the one write).
import type { OutgoingHttpHeaders } from "node:http";
import type { FastifyReply } from "fastify";
import type { StreamSink } from "../relay/call.ts";

export interface SseOptions {
  /** the longest a write may wait for the client to read before the connection is closed */
  stalledMs: number;
}

export function sseSink(reply: FastifyReply, options: SseOptions): StreamSink {
  const raw = reply.raw;
  const waitForDrain = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        raw.off("drain", done);
        raw.off("close", done);
        resolve();
      };
      const timer = setTimeout(() => {
        done();
        raw.destroy(); // the close aborts the call: charged what was delivered
      }, options.stalledMs);
      raw.on("drain", done);
      raw.on("close", done);
    });
  return {
    start() {
      reply.hijack();
      const headers = reply.getHeaders() as OutgoingHttpHeaders;
      raw.writeHead(200, {
        ...headers,
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        // proxies such as nginx would otherwise hold the chunks back
        "x-accel-buffering": "no",
      });
    },
    event(data: string, name?: string) {
      if (raw.destroyed || raw.writableEnded) return undefined;
      if (raw.write(name ? `event: ${name}\ndata: ${data}\n\n` : `data: ${data}\n\n`)) return undefined;
      return waitForDrain();
    },
    comment(text: string) {
      if (!raw.destroyed && !raw.writableEnded) raw.write(`: ${text}\n\n`);
    },
    end() {
      if (!raw.writableEnded) raw.end();
    },
  };
}
