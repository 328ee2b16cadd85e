// POST /v1/chat/completions as a client API of the pipeline (src/apis/types.ts). The
// canonical request is this API's own, so the edge translates nothing: it renders the
// completion and the chunks in OpenAI's shapes and errors in OpenAI's envelope.
import type { IncomingHttpHeaders } from "node:http";
import { parseBearer } from "../../auth/key-format.ts";
import type { GatewayError } from "../../errors/index.ts";
import type { Chunk } from "../../providers/types.ts";
import { safetyExtension } from "../../relay/review.ts";
import type {
  AnswerContext,
  ClientApi,
  ClientCall,
  ErrorAnswer,
  JsonAnswer,
  SseEvent,
  StreamEnd,
  StreamRenderer,
} from "../types.ts";
import { clientUsage, completionBody } from "./answer.ts";
import { ChunkStamp } from "./chunk-stamp.ts";
import { type ChatRequest, parseChatRequest } from "./request.ts";

const DONE: readonly SseEvent[] = [{ data: "[DONE]" }];
const NONE: readonly SseEvent[] = [];

/** Chunks as `data:` events; usage where the client asked for it; `[DONE]` once recorded. */
class ChatStream implements StreamRenderer {
  readonly #stamp: ChunkStamp;
  readonly #withUsage: boolean;

  constructor(context: AnswerContext, withUsage: boolean) {
    this.#stamp = new ChunkStamp(context.requestId, context.model, context.startedAt);
    this.#withUsage = withUsage;
  }

  chunk(chunk: Chunk): readonly SseEvent[] {
    // Without usage asked for, the usage chunk the gateway asked for on its own behalf goes.
    if (!this.#withUsage && !chunk.choices.length) return NONE;
    return [{ data: this.#stamp.chunk(chunk, this.#withUsage) }];
  }

  finish(end: StreamEnd): readonly SseEvent[] {
    const events: SseEvent[] = [];
    if (end.withheld)
      events.push({
        data: this.#stamp.event({
          choices: [...(end.choices.size ? end.choices : [0])].map((index) => ({
            index,
            delta: {},
            logprobs: null,
            finish_reason: "content_filter",
          })),
          safety: safetyExtension(end.withheld),
        }),
      });
    // The client asked for usage and the upstream's never reached it (stopped, or none): ours.
    if (this.#withUsage && (end.withheld || !end.usage.reported))
      events.push({ data: this.#stamp.event({ choices: [], usage: clientUsage(end.usage) }) });
    return events;
  }

  done(): readonly SseEvent[] {
    return DONE;
  }

  error(error: GatewayError): readonly SseEvent[] {
    return [{ data: JSON.stringify(error.toBody()) }];
  }
}

class ChatCall implements ClientCall {
  readonly api = chatCompletions;
  readonly request: ChatRequest;

  constructor(request: ChatRequest) {
    this.request = request;
  }

  json(answer: JsonAnswer): string {
    return completionBody(answer);
  }

  stream(context: AnswerContext): StreamRenderer {
    return new ChatStream(context, this.request.stream_options?.include_usage === true);
  }
}

export const chatCompletions: ClientApi = {
  name: "chat.completions",
  credential: (headers: IncomingHttpHeaders) => parseBearer(headers.authorization),
  error: (error: GatewayError): ErrorAnswer => ({
    status: error.status,
    body: JSON.stringify(error.toBody()),
  }),
  parse: (body: unknown) => new ChatCall(parseChatRequest(body)),
};
