// A recording proxy in front of a server: what a client sent (method, path, headers, the body
// as parsed JSON) and what it got back (status, headers, the body as text), every exchange in
// order. The conformance suite puts one in front of the gateway, so a cell that fails shows the
// gateway's own error (which names the field), and one in front of a mock, so the clients'
// requests are recorded as they sent them whatever the gateway makes of them.
import { once } from "node:events";
import { createServer, type IncomingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";

export interface Exchange {
  method: string;
  /** path and query */
  path: string;
  headers: IncomingHttpHeaders;
  /** the body as parsed JSON, or its text when it was not JSON */
  body: any;
  /** the body's size in bytes */
  bytes: number;
  status: number;
  responseHeaders: IncomingHttpHeaders;
  /** the answer as text (a stream's events included), or "" when the connection failed */
  response: string;
}

export interface Recorder {
  /** the origin to point a client at, e.g. http://127.0.0.1:40123 */
  url: string;
  exchanges: Exchange[];
  reset(): void;
  close(): Promise<void>;
}

/** A proxy to `target` (an origin) that records every exchange. */
export async function startRecorder(target: string): Promise<Recorder> {
  const to = new URL(target);
  const exchanges: Exchange[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (b: Buffer) => parts.push(b));
    req.on("end", () => {
      const raw = Buffer.concat(parts);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        body = raw.toString("utf8");
      }
      const exchange: Exchange = {
        method: req.method ?? "GET",
        path: req.url ?? "/",
        headers: req.headers,
        body,
        bytes: raw.length,
        status: 0,
        responseHeaders: {},
        response: "",
      };
      exchanges.push(exchange);
      const upstream = request(
        {
          host: to.hostname,
          port: to.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: to.host },
        },
        (answer) => {
          exchange.status = answer.statusCode ?? 0;
          exchange.responseHeaders = answer.headers;
          res.writeHead(exchange.status, answer.headers);
          const chunks: Buffer[] = [];
          answer.on("data", (b: Buffer) => {
            chunks.push(b);
            res.write(b);
          });
          answer.on("end", () => {
            exchange.response = Buffer.concat(chunks).toString("utf8");
            res.end();
          });
          answer.on("error", () => res.destroy());
        },
      );
      upstream.on("error", (err) => {
        exchange.response = `(proxy: ${err.message})`;
        if (!res.headersSent) res.writeHead(502).end();
        else res.destroy();
      });
      // a client that goes away takes the exchange with it
      res.on("close", () => {
        if (!res.writableFinished) upstream.destroy();
      });
      upstream.end(raw);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    reset: () => {
      exchanges.length = 0;
    },
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
