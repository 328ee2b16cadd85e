// A local HTTP server for adapter tests: records each request and answers with whatever the
// test set last (a fixture served byte for byte, a JSON error, a stream left open).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenForTests } from "./listen.ts";

export interface Received {
  method: string | undefined;
  /** path and query */
  url: string | undefined;
  headers: IncomingMessage["headers"];
  body: any;
}

export type Answer = (res: ServerResponse) => void;

export const sse =
  (bytes: Buffer | string): Answer =>
  (res) =>
    res.writeHead(200, { "content-type": "text/event-stream" }).end(bytes);

export const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Answer =>
  (res) =>
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));

export interface RecordingServer {
  /** the origin, e.g. http://127.0.0.1:43123 */
  origin: string;
  received: Received[];
  answer: Answer;
  close(): Promise<void>;
}

export async function startRecordingServer(): Promise<RecordingServer> {
  const state: RecordingServer = {
    origin: "",
    received: [],
    answer: (res) => res.writeHead(500).end(),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (p: Buffer) => parts.push(p));
    req.on("end", () => {
      const text = Buffer.concat(parts).toString("utf8");
      state.received.push({
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: text ? JSON.parse(text) : undefined,
      });
      state.answer(res);
    });
  });
  state.origin = (await listenForTests(server, 0, "127.0.0.1")).replace(/\/v1$/, "");
  return state;
}
