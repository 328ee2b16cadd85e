// POST /v1/chat/completions as a client API of the pipeline (src/apis/types.ts). The
// canonical request is this API's own, so the edge translates nothing: it renders the
// completion and the chunks in OpenAI's shapes and errors in OpenAI's envelope. Fields it does
// not know travel beside the request (`native`), for the upstreams whose API this is.
import type { IncomingHttpHeaders } from "node:http";
import { parseBearer } from "../../accounts/key-format.ts";
import { type ChatRequest, parseChatRequest } from "../../domain/chat-request.ts";
import type { Chunk } from "../../domain/completion.ts";
import type { GatewayError } from "../../errors/index.ts";
import type { NativeRequest } from "../../providers/types.ts";
import { safetyExtension, withheldNotice } from "../../safety/withheld.ts";
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
import { unknownFields } from "./request.ts";

const DONE: readonly SseEvent[] = [{ data: "[DONE]" }];
const NONE: readonly SseEvent[] = [];

/** Chunks as `data:` events; usage where the client asked for it; `[DONE]` once recorded. */
class ChatStream implements StreamRenderer {
  readonly #stamp: ChunkStamp;
  readonly #withUsage: boolean;
  readonly #requestId: string;

  constructor(context: AnswerContext, withUsage: boolean) {
    this.#stamp = new ChunkStamp(context.requestId, context.model, context.startedAt);
    this.#withUsage = withUsage;
    this.#requestId = context.requestId;
  }

  chunk(chunk: Chunk): readonly SseEvent[] {
    // Without usage asked for, the usage chunk the gateway asked for on its own behalf goes.
    if (!this.#withUsage && !chunk.choices.length) return NONE;
    return [{ data: this.#stamp.chunk(chunk, this.#withUsage) }];
  }

  finish(end: StreamEnd): readonly SseEvent[] {
    const events: SseEvent[] = [];
    // Withheld: the gateway's notice ends each choice's text, then content_filter.
    if (end.withheld)
      events.push({
        data: this.#stamp.event({
          choices: [...(end.choices.size ? end.choices : [0])].map((index) => ({
            index,
            delta: { content: `${end.choices.size ? "\n\n" : ""}${withheldNotice(this.#requestId)}` },
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
  readonly native: NativeRequest | undefined;

  constructor(request: ChatRequest, native: NativeRequest | undefined) {
    this.request = request;
    this.native = native;
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
  parse(body: unknown): ClientCall {
    const request = parseChatRequest(body);
    // Fields the gateway does not know (newer than it, or a server's own) go on to
    // OpenAI-compatible upstreams as they came; the others drop them with a notice.
    const untranslated = unknownFields(body as Record<string, unknown>);
    return new ChatCall(
      request,
      untranslated.length
        ? { api: "chat.completions", body: body as Record<string, unknown>, headers: {}, untranslated }
        : undefined,
    );
  },
};
