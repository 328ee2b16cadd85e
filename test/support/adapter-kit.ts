// What adapter tests share: a local HTTP server that records each request and answers with
// whatever the test set last (a fixture served byte for byte, a JSON error), and readers of
// the chunks an adapter's stream yields.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, before, beforeEach } from "node:test";
import type { Chunk } from "../../src/domain/completion.ts";
import { listenForTests } from "./listen.ts";

/** Every chunk the stream yields, and the error it ends with, if any. */
export async function drain(stream: AsyncIterable<Chunk>): Promise<{ chunks: Chunk[]; error: unknown }> {
  const chunks: Chunk[] = [];
  try {
    for await (const c of stream) chunks.push(c);
  } catch (error) {
    return { chunks, error };
  }
  return { chunks, error: undefined };
}

/** The text of one choice across the chunks. */
export const textOf = (chunks: Chunk[], index = 0) =>
  chunks
    .flatMap((c) => c.choices)
    .filter((c) => c.index === index)
    .map((c) => c.delta.content ?? "")
    .join("");

export const finishReasons = (chunks: Chunk[]) =>
  chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((r) => r !== null);

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

/**
 * A recording server for one test file: started before its tests, its requests cleared before
 * each, closed after them with every provider the file tracked.
 */
export function recordingServerForTests() {
  let server: RecordingServer | undefined;
  const providers: { close(): Promise<void> }[] = [];
  before(async () => {
    server = await startRecordingServer();
  });
  beforeEach(() => {
    if (server) server.received.length = 0;
  });
  after(async () => {
    await Promise.all(providers.map((p) => p.close()));
    await server?.close();
  });
  return {
    get server(): RecordingServer {
      if (!server) throw new Error("the recording server starts in before()");
      return server;
    },
    /** closes the provider after the file's tests */
    track<P extends { close(): Promise<void> }>(provider: P): P {
      providers.push(provider);
      return provider;
    },
  };
}
