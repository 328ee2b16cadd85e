/**
 * The client-API seam: how an API the gateway serves (chat completions, Anthropic's Messages,
 * OpenAI's Responses) plugs into the one pipeline. An API is translation at the edges only:
 * every call runs as the canonical request (`ChatRequest`) through the same relay (admission,
 * reservation, routing, review, records), and the edge turns what the relay produces back
 * into the client's wire format.
 *
 * How an edge plugs in:
 * 1. Implement `ClientApi` (a module under src/apis/<api>/): its `name` (records, metrics),
 *    how it reads the key from the headers, how it answers an error before its answer
 *    started, and `parse()`, which validates a body and returns a `ClientCall`.
 * 2. A `ClientCall` carries the canonical request, optionally the body in the API's own form
 *    (`native`, for adapters that speak that API: the Anthropic adapter for Messages, the
 *    openai-compatible one for Responses calls with OpenAI's built-in tools), and
 *    renders the answer: `json()` the whole body from the restamped canonical completion and
 *    the usage as charged; `stream()` a `StreamRenderer` that turns canonical chunks into the
 *    API's SSE events (named events where the API has them) and ends or fails the stream.
 * 3. Register the route in src/http/routes/v1/index.ts as
 *    `app.post(path, callRoute(api), relayRoute(deps, api))` (./relay-route.ts there): the
 *    route config `{ api, records: true }` makes the /v1 hooks authenticate with the API's
 *    credential and open a call record saying which API was used (refused calls too), and the
 *    error handler answer in the API's envelope and record the status it sent. A route of the
 *    API that runs no call (count_tokens) takes `{ config: { api } }` alone.
 * 4. Stateful work of an API (a response store) belongs to its route: `relay.run()` resolves
 *    once the call is recorded, and the ClientCall's renderers saw the whole answer.
 *
 * An adapter given `UpstreamCall.native` of an API it speaks may send that body (overriding
 * the model and the output bound) and return the upstream's native answer beside the
 * canonical one (`Completion.native`, `Chunk.native`); the edge then passes the native form on,
 * restamped, while the canonical fields still drive usage, review, records and charging.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { AuthContext } from "../auth/key-cache.ts";
import type { ApiName } from "../domain/api-names.ts";
import type { ChatRequest } from "../domain/chat-request.ts";
import type { Chunk, Completion, Usage } from "../domain/completion.ts";
import type { EmbeddingRequest } from "../domain/embedding-request.ts";
import type { GatewayError } from "../errors/index.ts";
import type { NativeRequest } from "../providers/types.ts";
import type { ReviewOutcome } from "../safety/policy.ts";
import type { SessionHints } from "./session.ts";

export type { ApiName } from "../domain/api-names.ts";

/** One SSE event as the client API frames it: an `event:` line when named, one `data:` line. */
export interface SseEvent {
  data: string;
  event?: string | undefined;
}

/** The key a request carries, as the API sends it. */
export type Credential = { kind: "missing" } | { kind: "token"; token: string };

/** What the identity of an answer is made of: the same for every event of a stream. */
export interface AnswerContext {
  /** the gateway's request id (`req_…`): answers derive their ids from it */
  requestId: string;
  /** the public model the client asked for */
  model: string;
  /** when the call started (ms since the epoch) */
  startedAt: number;
}

/** The usage a client is told: the figures as charged, and what the upstream reported. */
export interface AnswerUsage {
  /** everything the model read, cache reads and writes included */
  prompt: number;
  completion: number;
  /** of `prompt`, read from the provider's prompt cache */
  cachedInput: number;
  /** of `prompt`, written to the provider's prompt cache */
  cacheWrite: number;
  /** of `completion`, reasoning */
  reasoning: number;
  /** the upstream's own usage, when it reported one (undefined: the figures are an estimate) */
  reported: Usage | undefined;
}

/** A whole answer to render. */
export interface JsonAnswer extends AnswerContext {
  /** the upstream's completion (with `native` when the adapter answered in the API's form) */
  completion: Completion;
  usage: AnswerUsage;
  /** set when content safety flagged the output: the body says it was withheld */
  withheld?: ReviewOutcome | undefined;
}

/** How a stream that went well ends. */
export interface StreamEnd {
  usage: AnswerUsage;
  /** set when content safety flagged the output: what was held back is not sent */
  withheld: ReviewOutcome | undefined;
  /** the choice indexes the stream carried */
  choices: ReadonlySet<number>;
}

/** The events of one streamed answer. One renderer per call; its methods are called in order. */
export interface StreamRenderer {
  /**
   * Optional: called with the first chunk before it is rendered, for an API whose stream
   * announces the prompt's size when it starts (Messages' `message_start`). `usageSoFar` gives
   * what the upstream reported so far (its first chunks' usage, Anthropic's message_start), or
   * else the gateway's local count of the prompt (o200k_base, on the counting thread; output 0).
   * A renderer calls it only when it needs it, so native streams, which carry the upstream's
   * own message_start, never count.
   */
  begin?(first: Chunk, usageSoFar: () => Promise<Usage>): void | Promise<void>;
  /** the events of one canonical chunk (none, one or several) */
  chunk(chunk: Chunk): readonly SseEvent[];
  /**
   * after the last chunk, before the call's record is written: what completes the answer
   * (asynchronously where the API keeps the answer before releasing it: Responses' store)
   */
  finish(end: StreamEnd): readonly SseEvent[] | Promise<readonly SseEvent[]>;
  /** once the record is committed: the events that close a complete stream (chat: `[DONE]`) */
  done(): readonly SseEvent[];
  /** a failure after the stream started: the events that say so; the stream then ends */
  error(error: GatewayError): readonly SseEvent[];
}

/** One call in a client API, validated: the canonical request and how to answer it. */
export interface ClientCall {
  readonly api: ClientApi;
  /** what the pipeline runs */
  readonly request: ChatRequest;
  /** the body in the API's own form, for adapters that speak it natively */
  readonly native?: NativeRequest | undefined;
  /** the whole answer as this API's JSON body (asynchronously where the API keeps it first) */
  json(answer: JsonAnswer): string | Promise<string>;
  /** a renderer for this call's streamed answer */
  stream(context: AnswerContext): StreamRenderer;
}

/** The embeddings of a call to render: in the order of the request's inputs. */
export interface EmbeddingAnswer {
  /** the public model the client asked for */
  model: string;
  /** floats, or base64 where the upstream already encoded them so (the client asked for it) */
  vectors: ReadonlyArray<readonly number[] | string>;
  /** the input tokens as charged */
  promptTokens: number;
}

/** One embeddings call, validated: the request and how to answer it (src/apis/embeddings/). */
export interface EmbeddingsCall {
  readonly api: ClientEdge;
  readonly request: EmbeddingRequest;
  /** the whole answer as the API's JSON body */
  json(answer: EmbeddingAnswer): string;
}

/** An error as this API answers it before the answer started. */
export interface ErrorAnswer {
  status: number;
  /** the JSON body */
  body: string;
}

/**
 * What the HTTP layer needs of an API around its calls: where its key travels, how its errors
 * are answered, its name in records and metrics. Every API is one; an API whose calls are not
 * conversations (embeddings: src/apis/embeddings/) is only this, and runs its own way
 * through the relay.
 */
export interface ClientEdge {
  readonly name: ApiName;
  /**
   * the client's key, from the headers this API sends it in, or the URL (path and query) for
   * an API whose clients may put it in the query (Gemini's `?key=`)
   */
  credential(headers: IncomingHttpHeaders, url?: string): Credential;
  /** the message of a missing key, naming those headers (default: the catalog's) */
  readonly missingKey?: string | undefined;
  /** a header the API's SDKs read the request id from, sent besides `x-request-id` */
  readonly requestIdHeader?: string | undefined;
  /** the status and envelope of an error answered before any byte of the answer */
  error(error: GatewayError): ErrorAnswer;
}

export interface ClientApi extends ClientEdge {
  /**
   * Validates a parsed JSON body (and reads the headers the API defines); throws
   * GatewayError invalid_request naming the bad parameter. `caller` is the authenticated key
   * and account, for what the call reads of the account's own (Responses: the stored
   * conversation a previous_response_id continues, which makes the parse asynchronous).
   */
  parse(body: unknown, headers: IncomingHttpHeaders, caller: AuthContext): ClientCall | Promise<ClientCall>;
  /**
   * Where the API's body names the agent session a call belongs to (./session.ts reads the
   * headers): read from the body as it came, before it is validated, so a call refused for
   * its body still carries its session. Absent: the headers alone say.
   */
  sessionHints?(body: unknown): SessionHints;
}
