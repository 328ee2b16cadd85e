// An upstream that streams one long answer per request as fast as its socket takes it, in the
// wire format of the path asked (OpenAI's chat completions, Anthropic's Messages, OpenAI's
// Responses), and says how far each answer got: the bytes the kernel took from it. A gateway
// that passes backpressure on stalls it once its client stops reading; one that reads ahead
// lets it run on. Each delta is one short word, as models stream (a token at a time), so the
// per-event cost of every stage is what a real answer pays; events leave in writes of
// EVENTS_PER_WRITE, as a fast upstream's do. A request whose text says `firehose:N` is
// answered N words instead of the default.
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenForTests } from "./listen.ts";

export interface FirehoseAnswer {
  path: string;
  /** the whole answer's bytes */
  size: number;
  /** bytes of the answer the kernel took (each write's callback: flushed from the process) */
  written: number;
  /** the whole answer was written */
  finished: boolean;
  /** the connection closed before the answer was written */
  aborted: boolean;
}

export interface FirehoseUpstream {
  /** base URL ending in /v1 */
  url: string;
  /** the origin, for providers whose base_url has no /v1 (Anthropic's) */
  origin: string;
  readonly answers: FirehoseAnswer[];
  /** answers from now on wait, their headers unsent, until release() */
  hold(): void;
  /** starts every answer held, and those to come */
  release(): void;
  close(): Promise<void>;
}

const WORD = " lorem";
const EVENTS_PER_WRITE = 16;

function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
}

/** The answer's events, lazily: opening events, `deltas` text deltas, closing events. */
function* answerEvents(path: string, deltas: number): Generator<string> {
  if (path.endsWith("/messages")) {
    yield sse(
      {
        type: "message_start",
        message: {
          id: "msg_firehose",
          type: "message",
          role: "assistant",
          model: "firehose",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 5, output_tokens: 1 },
        },
      },
      "message_start",
    );
    yield sse(
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      "content_block_start",
    );
    const delta = sse(
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: WORD } },
      "content_block_delta",
    );
    for (let i = 0; i < deltas; i++) yield delta;
    yield sse({ type: "content_block_stop", index: 0 }, "content_block_stop");
    yield sse(
      {
        type: "message_delta",
        delta: { stop_reason: "end_turn", stop_sequence: null },
        usage: { output_tokens: deltas },
      },
      "message_delta",
    );
    yield sse({ type: "message_stop" }, "message_stop");
    return;
  }
  if (path.endsWith("/responses")) {
    const response = {
      id: "resp_firehose",
      object: "response",
      created_at: 1,
      status: "in_progress",
      model: "firehose",
      output: [],
    };
    let seq = 0;
    yield sse({ type: "response.created", sequence_number: seq++, response }, "response.created");
    const item = {
      id: "msg_firehose",
      type: "message",
      status: "in_progress",
      role: "assistant",
      content: [],
    };
    yield sse(
      { type: "response.output_item.added", sequence_number: seq++, output_index: 0, item },
      "response.output_item.added",
    );
    // the delta event around its sequence number, made once: JSON.stringify per event would
    // cost this process more than the gateway's work it measures
    const [head, tail] = sse(
      {
        type: "response.output_text.delta",
        sequence_number: -1,
        item_id: "msg_firehose",
        output_index: 0,
        content_index: 0,
        delta: WORD,
      },
      "response.output_text.delta",
    ).split("-1");
    for (let i = 0; i < deltas; i++) yield `${head}${seq++}${tail}`;
    // the closing Response lists no output: the answer's text is not repeated here
    yield sse(
      {
        type: "response.completed",
        sequence_number: seq++,
        response: {
          ...response,
          status: "completed",
          usage: { input_tokens: 5, output_tokens: deltas, total_tokens: deltas + 5 },
        },
      },
      "response.completed",
    );
    return;
  }
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    sse({
      id: "chatcmpl-firehose",
      object: "chat.completion.chunk",
      created: 1,
      model: "firehose",
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
  yield chunk({ role: "assistant", content: "" });
  const delta = chunk({ content: WORD });
  for (let i = 0; i < deltas; i++) yield delta;
  yield chunk({}, "stop");
  yield sse({
    id: "chatcmpl-firehose",
    object: "chat.completion.chunk",
    created: 1,
    model: "firehose",
    choices: [],
    usage: { prompt_tokens: 5, completion_tokens: deltas, total_tokens: deltas + 5 },
  });
  yield "data: [DONE]\n\n";
}

/** Starts the upstream; every answer carries `deltas` words (one token each) unless its request says. */
export async function startFirehose(options: { deltas: number }): Promise<FirehoseUpstream> {
  const answers: FirehoseAnswer[] = [];
  const sizes = new Map<string, number>();
  let held: Array<() => void> | undefined;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const asked = /firehose:(\d+)/.exec(Buffer.concat(parts).toString());
      void answer(req.url ?? "", asked ? Number(asked[1]) : options.deltas, res);
    });
  });
  function sizeOf(path: string, deltas: number): number {
    const key = `${path} ${deltas}`;
    let size = sizes.get(key);
    if (size === undefined) {
      size = 0;
      for (const event of answerEvents(path, deltas)) size += Buffer.byteLength(event);
      sizes.set(key, size);
    }
    return size;
  }
  async function answer(path: string, deltas: number, res: ServerResponse): Promise<void> {
    const record: FirehoseAnswer = {
      path,
      size: sizeOf(path, deltas),
      written: 0,
      finished: false,
      aborted: false,
    };
    answers.push(record);
    res.on("close", () => {
      if (!record.finished) record.aborted = true;
    });
    if (held) await new Promise<void>((resolve) => held!.push(resolve));
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    let batch = "";
    let events = 0;
    for (const event of answerEvents(path, deltas)) {
      batch += event;
      if (++events % EVENTS_PER_WRITE) continue;
      if (!(await write(res, record, batch))) return;
      batch = "";
    }
    if (batch && !(await write(res, record, batch))) return;
    res.end(() => {
      record.finished = true;
    });
  }
  const url = await listenForTests(server, 0, "127.0.0.1");
  return {
    url,
    origin: url.slice(0, -"/v1".length),
    answers,
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = undefined;
      for (const start of waiting) start();
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}

/** Writes, counting the bytes once the kernel has them; waits while the socket is full. False: the connection is gone. */
async function write(res: ServerResponse, record: FirehoseAnswer, data: string): Promise<boolean> {
  if (res.destroyed) return false;
  const bytes = Buffer.byteLength(data);
  const more = res.write(data, (err) => {
    if (!err) record.written += bytes;
  });
  if (!more) await drained(res);
  return !res.destroyed;
}

/** Resolves once the response drains or closes (both listeners removed either way). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
