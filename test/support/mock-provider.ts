// The server side the native-format mock providers share (mock-anthropic-upstream.ts,
// mock-gemini-upstream.ts): requests recorded, in-flight and aborted requests counted, replies
// as JSON or as SSE events with optional delays and faults, `mock:` directives read from the
// last user text, and the command line the benchmark starts them with. Each provider mock
// adds only its wire format and its request validation.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer } from "node:http";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { listenForTests } from "./listen.ts";
import type { MockUpstream, MockUpstreamOptions, ReceivedRequest } from "./mock-openai-upstream.ts";

/** One request as a provider mock sees it. */
export interface MockRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  /** the parsed JSON body; undefined when it was not JSON */
  body: any;
  /** the request as recorded (when the mock records): where agent mode notes the usage it answered */
  received?: ReceivedRequest | undefined;
}

/** How a provider mock answers one request; exactly one call per request. */
export interface Reply {
  json(status: number, body: unknown, headers?: Record<string, string>): void;
  /**
   * SSE events (each already framed, ending in a blank line), with the mock's chunk delay
   * between them. `stopAfter`: send that many events, then stall ("hang") or cut the
   * connection ("drop").
   */
  sse(events: string[], fault?: { stopAfter: number; kind: "hang" | "drop" }): void;
  /** never answer, until the client goes away */
  hang(): void;
  /** cut the connection without an answer */
  drop(): void;
}

export type MockHandler = (request: MockRequest, reply: Reply) => void;

export const WORDS =
  "Hello world this is a mock reply from the model with some simple words for testing".split(" ");

/** The reply of `tokens` words, which the mocks count as one token each. */
export function replyWords(tokens: number): string[] {
  return Array.from({ length: tokens }, (_, i) => (i === 0 ? WORDS[0]! : ` ${WORDS[i % WORDS.length]}`));
}

export function countWords(text: string): number {
  const trimmed = text.trim();
  return trimmed ? trimmed.split(/\s+/).length : 0;
}

/** The size of a mock's embeddings when the request asks for none. */
export const MOCK_DIMENSIONS = 16;

/**
 * A mock embedding model's vector of an input (a text, or token ids): deterministic, each
 * value a multiple of 1/1024 in [-1, 1), exact in float32, so a base64 encoding of it decodes
 * to the same numbers. The OpenAI and Gemini mocks embed alike, so a test expects the same
 * vector whichever answered.
 */
export function mockVector(input: string | readonly number[], dims: number): number[] {
  const seed = typeof input === "string" ? input : `ids:${input.join(",")}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193);
  const out = new Array<number>(dims);
  for (let i = 0; i < dims; i++) {
    h = Math.imul(h ^ (i + 1), 0x01000193);
    h ^= h >>> 15;
    out[i] = (((h >>> 0) % 2048) - 1024) / 1024;
  }
  return out;
}

/**
 * What a mock model writes into a tool's string arguments (`mock:call=NAME`): several lines
 * with quotes, so every translation of it (JSON strings, custom tool input) is exercised.
 */
export const MOCK_TOOL_TEXT = '*** Begin Patch\n*** Add File: hello.txt\n+print("hello")\n*** End Patch';

/**
 * The arguments a mock model gives a function whose parameters are this JSON schema: each
 * property a value of its type (strings MOCK_TOOL_TEXT), as a model fills a schema.
 */
export function mockArguments(schema: unknown): Record<string, unknown> {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties;
  const args: Record<string, unknown> = {};
  for (const [name, property] of Object.entries(properties ?? {})) {
    const type = Array.isArray(property?.type) ? property.type[0] : property?.type;
    args[name] =
      type === "number" || type === "integer"
        ? 1
        : type === "boolean"
          ? true
          : type === "array"
            ? []
            : type === "object"
              ? {}
              : MOCK_TOOL_TEXT;
  }
  return args;
}

const DIRECTIVE_RE = /(?<![\w-])mock:([a-z][a-z-]*)(?:=(\S+))?/g;

/** `mock:name` and `mock:name=value` directives of a text. */
export function directives(text: string): Map<string, string> {
  const found = new Map<string, string>();
  if (!text.includes("mock:")) return found;
  for (const m of text.matchAll(DIRECTIVE_RE)) found.set(m[1]!, m[2] ?? "");
  return found;
}

/** A directive's count, or undefined. */
export function countOf(d: Map<string, string>, name: string): number | undefined {
  const raw = d.get(name);
  const n = raw === undefined ? Number.NaN : Number.parseInt(raw, 10);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

let seq = 0;
/** A short unique id with the given prefix (never random per request: cheap and ordered). */
export function mockId(prefix: string): string {
  seq = (seq + 1) % 1e12;
  return `${prefix}${process.pid.toString(36)}${seq.toString(36).padStart(8, "0")}`;
}

export function sseEvent(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
}

/** One request a mock is answering. */
export interface Active {
  /** set when the mock has finished answering (or deliberately cut the connection) */
  done: boolean;
  /** set when the request left `inFlight` */
  closed: boolean;
  /** the `reset()` generation it started in; aborts of older requests are not counted */
  gen: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * A mock's bookkeeping of the requests it answers, and the MockUpstream it hands a test:
 * requests in flight, those the client closed before the mock finished (aborts), reset, close.
 */
export function requestTracker() {
  const active = new Set<Active>();
  let aborted = 0;
  let gen = 0;
  let closing = false;
  /** directives of the mock's own, applied to every request (setDirectives) */
  let own = "";
  const finish = (state: Active): void => {
    if (state.closed) return;
    state.closed = true;
    active.delete(state);
    if (state.timer !== undefined) {
      clearTimeout(state.timer);
      state.timer = undefined;
    }
    if (!state.done && !closing && state.gen === gen) aborted++;
  };
  return {
    /** a request begins; it is finished when its response closes */
    begin(res: ServerResponse): Active {
      const state: Active = { done: false, closed: false, gen, timer: undefined };
      active.add(state);
      res.once("close", () => finish(state));
      return state;
    },
    finish,
    ownDirectives: () => own,
    upstream(server: Server, url: string, requests: ReceivedRequest[]): MockUpstream {
      let closed: Promise<void> | undefined;
      return {
        url,
        requests,
        inFlight: () => active.size,
        aborted: () => aborted,
        reset: () => {
          requests.length = 0;
          aborted = 0;
          gen++;
        },
        setDirectives: (text) => {
          own = text;
        },
        close: () => {
          closed ??= new Promise<void>((done) => {
            closing = true;
            server.close(() => {
              // Sockets are destroyed; settle requests whose 'close' event is still queued.
              for (const state of active) finish(state);
              done();
            });
            server.closeAllConnections();
          });
          return closed;
        },
      };
    },
  };
}

export function startMockProvider(
  handler: MockHandler,
  options: MockUpstreamOptions & { record?: boolean } = {},
): Promise<MockUpstream> {
  const latency = Math.max(0, options.latencyMs ?? 0);
  const chunkDelay = Math.max(0, options.chunkDelayMs ?? 0);
  const record = options.record !== false;
  const requests: ReceivedRequest[] = [];
  const tracker = requestTracker();

  function replyFor(req: IncomingMessage, res: ServerResponse, state: Active): Reply {
    const end = () => {
      state.done = true;
    };
    return {
      json(status, body, headers = {}) {
        end();
        const text = JSON.stringify(body);
        res.writeHead(status, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(text),
          ...headers,
        });
        res.end(text);
      },
      sse(events, fault) {
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
        });
        const stopAfter = fault ? Math.min(fault.stopAfter, events.length) : events.length;
        const stop = () => {
          if (fault?.kind === "drop") {
            end();
            req.socket.destroy();
          } // a hang leaves the response open; the client's close is counted
        };
        if (chunkDelay === 0) {
          if (!fault) {
            end();
            res.end(events.join(""));
            return;
          }
          res.write(events.slice(0, stopAfter).join(""), stop);
          return;
        }
        let i = 0;
        const next = () => {
          state.timer = undefined;
          if (state.closed) return;
          if (i === stopAfter) {
            if (fault) return stop();
            end();
            return res.end();
          }
          res.write(events[i++]!);
          state.timer = setTimeout(next, chunkDelay);
        };
        next();
      },
      hang() {},
      drop() {
        end();
        req.socket.destroy();
      },
    };
  }

  const server = createServer({ keepAliveTimeout: 65_000, noDelay: true }, (req, res) => {
    const url = new URL(req.url ?? "/", "http://mock");
    const state = tracker.begin(res);
    const parts: Buffer[] = [];
    req.on("data", (b: Buffer) => parts.push(b));
    req.on("end", () => {
      const raw = Buffer.concat(parts).toString("utf8");
      let body: any;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = undefined;
      }
      const received: ReceivedRequest | undefined = record
        ? {
            method: req.method ?? "POST",
            path: url.pathname + url.search,
            headers: req.headers,
            body: body ?? raw,
            at: Date.now(),
          }
        : undefined;
      if (received) requests.push(received);
      const request: MockRequest = {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body,
        received,
      };
      const go = () => {
        state.timer = undefined;
        if (!state.closed) handler(request, replyFor(req, res, state));
      };
      const wait = countOf(directives(raw), "latency") ?? latency;
      if (wait > 0) state.timer = setTimeout(go, wait);
      else go();
    });
  });

  // these providers' base URLs are the origin: their adapters append the API's own paths
  return listenForTests(server, options.port ?? 0, options.host ?? "127.0.0.1").then((v1) =>
    tracker.upstream(server, v1.replace(/\/v1$/, ""), requests),
  );
}

/** The keys a mock accepts (`MockUpstreamOptions.apiKey`); undefined: it accepts any. */
export function keySet(apiKey: string | readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (apiKey === undefined) return undefined;
  return new Set(typeof apiKey === "string" ? [apiKey] : apiKey);
}

/** Whether `moduleUrl` is the script node was started with. */
export function isMain(moduleUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && resolve(entry) === fileURLToPath(moduleUrl);
}

/**
 * The command line of a mock: `--port N --host H --latency MS --chunk-delay MS --api-key K
 * --no-record [--azure]`; prints `{"url": …}` and exits cleanly on SIGTERM or SIGINT.
 */
export async function runMockCli(
  name: string,
  start: (options: MockUpstreamOptions & { record?: boolean }) => Promise<MockUpstream>,
): Promise<void> {
  const options: MockUpstreamOptions & { record?: boolean } = {};
  const argv = process.argv.slice(2);
  const fail = (message: string): never => {
    process.stderr.write(`${name}: ${message}\n`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = () => argv[++i] ?? fail(`${flag} needs a value`);
    const number = () => {
      const n = Number(value());
      return Number.isFinite(n) && n >= 0 ? n : fail(`${flag} needs a non-negative number`);
    };
    if (flag === "--port") options.port = number();
    else if (flag === "--host") options.host = value();
    else if (flag === "--latency") options.latencyMs = number();
    else if (flag === "--chunk-delay") options.chunkDelayMs = number();
    else if (flag === "--api-key") options.apiKey = value();
    else if (flag === "--no-record") options.record = false;
    else if (flag === "--azure") options.azure = true;
    else if (flag === "--prompt-count") {
      const mode = value();
      options.promptCount =
        mode === "words" || mode === "template" ? mode : fail("--prompt-count is words or template");
    } else fail(`unknown argument ${flag}`);
  }
  const mock = await start(options);
  process.stdout.write(`${JSON.stringify({ url: mock.url })}\n`);
  const stop = () => void mock.close().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
