// The SSE writer behind a streaming answer: raw Node response, `data: …\n\n` framing, and
// backpressure (a slow client makes the relay wait instead of buffering the whole answer).
import type { OutgoingHttpHeaders } from "node:http";
import type { FastifyReply } from "fastify";
import type { StreamSink } from "../relay/call.ts";

export function sseSink(reply: FastifyReply): StreamSink {
  const raw = reply.raw;
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
    event(data: string) {
      if (raw.destroyed || raw.writableEnded) return undefined;
      if (raw.write(`data: ${data}\n\n`)) return undefined;
      return new Promise<void>((resolve) => {
        const done = () => {
          raw.off("drain", done);
          raw.off("close", done);
          resolve();
        };
        raw.on("drain", done);
        raw.on("close", done);
      });
    },
    end() {
      if (!raw.writableEnded) raw.end();
    },
  };
}
