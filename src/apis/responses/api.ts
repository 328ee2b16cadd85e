// POST /v1/responses as a client API of the pipeline (src/apis/types.ts): the Responses
// request (with the stored conversation a previous_response_id continues) becomes the
// canonical chat request, and the canonical answer comes back as a Response object or the
// Responses event sequence. A response with `store` (the default) is kept for its account
// before it is released, so a client that continues it at once finds it.
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import { parseBearer } from "../../accounts/key-format.ts";
import type { AuthContext } from "../../auth/key-cache.ts";
import type { ChatRequest } from "../../domain/chat-request.ts";
import type { Chunk } from "../../domain/completion.ts";
import { GatewayError } from "../../errors/index.ts";
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
import { type ResponseEvent, ResponseEvents } from "./events.ts";
import { namespacesOf } from "./namespaces.ts";
import { NativeResponseEvents, nativeResponsesBody, restampResponse } from "./native.ts";
import { type InputItem, parseResponsesRequest, type ResponsesRequest } from "./request.ts";
import {
  messageItem,
  outputItems,
  ResponseIds,
  type ResponseObject,
  responseObject,
  responsesUsage,
  statusOf,
} from "./response.ts";
import type { Owner, ResponseStore } from "./stored.ts";
import { builtinToolUses, toChatRequest } from "./to-chat.ts";

export interface ResponsesDeps {
  store: ResponseStore;
  logger: Logger;
}

const sse = (event: ResponseEvent): SseEvent => ({ event: event.type, data: JSON.stringify(event) });

class ResponsesCall implements ClientCall {
  readonly api: ClientApi;
  readonly request: ChatRequest;
  readonly native: NativeRequest | undefined;
  readonly #deps: ResponsesDeps;
  readonly #owner: Owner;
  readonly #req: ResponsesRequest;

  constructor(
    api: ClientApi,
    deps: ResponsesDeps,
    owner: Owner,
    req: ResponsesRequest,
    request: ChatRequest,
    native: NativeRequest | undefined,
  ) {
    this.api = api;
    this.#deps = deps;
    this.#owner = owner;
    this.#req = req;
    this.request = request;
    this.native = native;
  }

  async json(answer: JsonAnswer): Promise<string> {
    const ids = new ResponseIds(answer.requestId);
    const createdAt = Math.floor(answer.startedAt / 1000);
    const native = answer.completion.native;
    if (native && !answer.withheld) {
      // the upstream's Response, built-in tools' items and all, as the gateway's
      const body = JSON.stringify(
        restampResponse(native, this.#req, ids, createdAt, responsesUsage(answer.usage)),
      );
      await this.keep(ids.id, body);
      return body;
    }
    const choice = answer.completion.choices[0];
    // Withheld: a completed response whose one message is the gateway's notice; an incomplete
    // one (content_filter) is what Codex takes for a dropped stream and sends again.
    const { status, incomplete_details } = statusOf(answer.withheld ? "stop" : choice?.finish_reason);
    const output = answer.withheld
      ? [messageItem(ids.item("msg"), withheldNotice(answer.requestId), undefined, status)]
      : choice
        ? outputItems(ids, choice.message, status, namespacesOf(this.#req))
        : [];
    const response: ResponseObject & { safety?: unknown } = responseObject(this.#req, {
      ids,
      createdAt,
      status,
      output,
      incomplete_details,
      usage: responsesUsage(answer.usage),
    });
    if (answer.withheld) response.safety = safetyExtension(answer.withheld);
    const body = JSON.stringify(response);
    await this.keep(ids.id, body);
    return body;
  }

  stream(context: AnswerContext): StreamRenderer {
    return new ResponsesStream(this, this.#req, context);
  }

  /**
   * Keeps the Response for its account unless the request said `store: false`. A response
   * that cannot be stored is still delivered (the client has its answer; it just cannot be
   * retrieved or continued), and the failure is logged.
   */
  async keep(id: string, body: string): Promise<void> {
    if (this.#req.store === false) return;
    const input: InputItem[] =
      typeof this.#req.input === "string"
        ? [{ type: "message", role: "user", content: this.#req.input }]
        : this.#req.input;
    try {
      const kept = await this.#deps.store.save(this.#owner, {
        id,
        previousResponseId: this.#req.previous_response_id ?? null,
        input,
        response: body,
      });
      if (!kept)
        this.#deps.logger.warn(
          { response_id: id },
          "a response over responses.max_stored_bytes was delivered and not stored",
        );
    } catch (err) {
      this.#deps.logger.warn(
        { err, response_id: id },
        "could not store a response; it was delivered all the same",
      );
    }
  }
}

/**
 * The Responses event sequence of one streamed answer: made from the canonical chunks, or the
 * upstream's own events passed on when it answered natively (the first chunk says which: one
 * deployment answers a whole stream).
 */
class ResponsesStream implements StreamRenderer {
  readonly #call: ResponsesCall;
  readonly #req: ResponsesRequest;
  readonly #ids: ResponseIds;
  readonly #createdAt: number;
  readonly #events: ResponseEvents;
  /** the upstream's own events, passed on: set at its first chunk when it answered natively */
  #native: NativeResponseEvents | undefined;
  /** translated: response.created and response.in_progress were sent */
  #started = false;
  readonly #requestId: string;

  constructor(call: ResponsesCall, req: ResponsesRequest, context: AnswerContext) {
    this.#call = call;
    this.#req = req;
    this.#requestId = context.requestId;
    this.#ids = new ResponseIds(context.requestId);
    this.#createdAt = Math.floor(context.startedAt / 1000);
    this.#events = new ResponseEvents(req, this.#ids, this.#createdAt);
  }

  /** Translated: response.created and response.in_progress open the stream, with the upstream's first chunk. */
  #open(out: ResponseEvent[]): void {
    if (this.#started) return;
    this.#started = true;
    out.push(...this.#events.start());
  }

  chunk(chunk: Chunk): readonly SseEvent[] {
    if (!this.#started && !this.#native && chunk.native)
      this.#native = new NativeResponseEvents(this.#req, this.#ids, this.#createdAt);
    if (this.#native) return this.#native.pass(chunk.native ?? []).map(sse);
    const out: ResponseEvent[] = [];
    this.#open(out);
    out.push(...this.#events.chunk(chunk));
    return out.map(sse);
  }

  async finish(end: StreamEnd): Promise<readonly SseEvent[]> {
    const out: ResponseEvent[] = [];
    let response: (ResponseObject & { safety?: unknown }) | undefined;
    if (this.#native) {
      out.push(
        ...this.#native.finish(
          responsesUsage(end.usage),
          end.withheld ? withheldNotice(this.#requestId) : undefined,
        ),
      );
      response = this.#native.response;
    } else {
      this.#open(out);
      out.push(
        ...this.#events.finish(
          responsesUsage(end.usage),
          end.withheld ? withheldNotice(this.#requestId) : undefined,
        ),
      );
      response = this.#events.response;
    }
    if (response) {
      if (end.withheld) response.safety = safetyExtension(end.withheld);
      await this.#call.keep(response.id, JSON.stringify(response));
    }
    return out.map(sse);
  }

  done(): readonly SseEvent[] {
    return [];
  }

  error(error: GatewayError): readonly SseEvent[] {
    const failure = { code: error.code, message: error.message, param: error.param };
    if (this.#native) return this.#native.fail(failure).map(sse);
    const out: ResponseEvent[] = [];
    this.#open(out);
    out.push(...this.#events.fail(failure));
    return out.map(sse);
  }
}

/** The input with each item_reference to an item the account stored replaced by that item; others are left for the translation to refuse. */
async function resolveReferences(
  store: ResponseStore,
  owner: Owner,
  input: InputItem[],
): Promise<InputItem[]> {
  if (!input.some((item) => item.type === "item_reference")) return input;
  const out: InputItem[] = [];
  for (const [i, item] of input.entries()) {
    if (item.type !== "item_reference") {
      out.push(item);
      continue;
    }
    const id = (item as { id: string }).id;
    const found = await store.item(owner, id);
    if (!found)
      throw new GatewayError("invalid_request", {
        message: `Invalid parameter 'input[${i}]': no stored item of this account has the id '${id.slice(0, 128)}'.`,
        param: `input[${i}]`,
      });
    out.push(found);
  }
  return out;
}

/** The Responses API, over the account's stored responses. */
export function responsesApi(deps: ResponsesDeps): ClientApi {
  const api: ClientApi = {
    name: "responses",
    credential: (headers: IncomingHttpHeaders) => parseBearer(headers.authorization),
    error: (error: GatewayError): ErrorAnswer => ({
      status: error.status,
      body: JSON.stringify(error.toBody()),
    }),
    // Codex keys the prompt cache by its thread
    sessionHints: (body) => ({
      promptCacheKey:
        body !== null && typeof body === "object"
          ? (body as { prompt_cache_key?: unknown }).prompt_cache_key
          : undefined,
    }),
    async parse(body: unknown, _headers: IncomingHttpHeaders, caller: AuthContext): Promise<ClientCall> {
      const req = parseResponsesRequest(body);
      const owner = { accountId: caller.account.id, keyId: caller.key.id };
      const prior = req.previous_response_id
        ? {
            items: await deps.store.conversation(owner, req.previous_response_id),
            param: "previous_response_id",
          }
        : undefined;
      // References to items the gateway stored for the key (the AI SDK sends its earlier
      // output back so): the items themselves, on every upstream.
      if (typeof req.input !== "string") req.input = await resolveReferences(deps.store, owner, req.input);
      // A response to keep must fit what is kept: refused before anything is reserved or sent.
      if (req.store !== false) await deps.store.admit(owner, req.input);
      const { request, untranslated } = toChatRequest(req, prior);
      // The body goes beside the canonical request, for an upstream of this API, which takes
      // what the translation cannot carry (built-in tools, fields it does not know) natively.
      const native: NativeRequest = {
        api: "responses",
        body: nativeResponsesBody(body as Record<string, unknown>, prior, req.input),
        headers: {},
        builtinTools: builtinToolUses(req, prior),
        untranslated,
      };
      return new ResponsesCall(api, deps, owner, req, request, native);
    },
  };
  return api;
}
