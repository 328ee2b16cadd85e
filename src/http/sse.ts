// The SSE writer behind a streaming answer: raw Node response, `[event: …\n]data: …\n\n` framing, and
// backpressure (a slow client makes the relay wait instead of buffering the answer). A client
// that reads nothing for `stalledMs` is cut off, so it cannot hold a call (and its upstream
// connection) open forever; the relay then ends the call as for a disconnect.
//
// What waits in the process for a client's socket is bounded by BUFFERED_BYTES, below the
// socket's own high-water mark (64 KB): events are small, and each one buffered costs its
// frame and three write requests (chunk size, data, CRLF), so a client that read nothing held
// about 120 KB of heap by the high-water mark alone.
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

/** events buffered for a client beyond this wait until they have reached its socket */
export const BUFFERED_BYTES = 16 * 1024;

export function sseSink(reply: FastifyReply, options: SseOptions): StreamSink {
  const raw = reply.raw;
  /** Resolves once `whenReady` calls back, or the connection closes, or after stalledMs, closing it. */
  const wait = (whenReady: (ready: () => void) => void) =>
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
      raw.on("close", done);
      whenReady(done);
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
      const frame = name ? `event: ${name}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
      // Enough waits already: this one goes out, and the next waits until it has left.
      if (raw.writableLength >= BUFFERED_BYTES) return wait((ready) => raw.write(frame, ready));
      if (raw.write(frame)) return undefined;
      return wait((ready) => raw.on("drain", ready));
    },
    comment(text: string) {
      if (!raw.destroyed && !raw.writableEnded) raw.write(`: ${text}\n\n`);
    },
    end() {
      if (!raw.writableEnded) raw.end();
    },
  };
}
