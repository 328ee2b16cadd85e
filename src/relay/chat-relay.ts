// One chat completion: resolve the model -> reserve tokens -> call upstream -> settle ->
// record -> answer. Every reservation is settled or released exactly once, on every path.

import type { Logger } from "pino";
import type { AuthContext } from "../auth/key-cache.ts";
import { GatewayError } from "../errors/index.ts";
import { type RateLimiter, type RateTicket, rateHeaders, rateSubjects } from "../ledger/rate-limiter.ts";
import type { Ledger, Reservation } from "../ledger/types.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { Registry, ResolvedModel } from "../providers/registry.ts";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatUsage,
  UpstreamError,
} from "../providers/types.ts";
import type { CallDraft, CallStatus } from "../records/draft.ts";
import type { RecordWriter } from "../records/writer.ts";
import type { ReviewOutcome, SafetyPolicy } from "../safety/policy.ts";
import { REVIEW_OVERLAP_CHARS, Segmenter } from "../safety/segmenter.ts";
import type { ReviewStage } from "../safety/types.ts";
import { countPromptTokens, countText, messageText } from "../tokens/count.ts";
import { type ChatRequest, FORWARDED_FIELDS } from "./request-schema.ts";

/** The local prompt count is o200k; other tokenizers count somewhat more. Reserve for that. */
const PROMPT_MARGIN = 1.1;
/** the smallest answer worth sending upstream; below it the request is refused */
const MIN_OUTPUT_TOKENS = 16;
/** how a call the client left is recorded: 499 is nginx's "client closed request" */
const CLIENT_GONE = { status: "client_disconnect", httpStatus: 499, errorCode: "client_disconnect" } as const;
/** what a client sees in place of model output that content safety withheld */
export const WITHHELD_MESSAGE = "This response was withheld by the gateway's content safety review.";
/** parameters kept in the call record (never message text) */
const RECORDED_PARAMS = ["temperature", "top_p", "max_tokens", "max_completion_tokens", "n", "seed"] as const;

/** The reason the HTTP layer aborts with when the client goes away. */
export class ClientGone extends Error {
  override name = "ClientGone";
}

/** What the relay writes a stream to; the HTTP layer implements it over the raw response. */
export interface StreamSink {
  /** sends the status line and SSE headers; after this, errors travel as SSE events */
  start(): void;
  /** writes one `data:` event; resolves when the socket can take more (backpressure) */
  event(data: string): Promise<void> | undefined;
  end(): void;
}

export interface RelayDeps {
  registry: Registry;
  ledger: Ledger;
  rates: RateLimiter;
  records: RecordWriter;
  metrics: Metrics;
  safety: SafetyPolicy;
  logger: Logger;
}

/**
 * How the answer leaves: `sse` streams upstream chunks as they come; `json` is one body (also
 * for `stream: true` while safety is on, spec 4.2); `reviewed` streams reviewed segments.
 */
type Answer = "sse" | "json" | "reviewed";

export interface CallContext {
  auth: AuthContext;
  draft: CallDraft;
  /** aborted with ClientGone when the client disconnects */
  clientSignal: AbortSignal;
  /** sets response headers (the rate-limit windows) before the answer starts */
  setHeaders(headers: Record<string, string>): void;
}

/** The reservation of one request and its rate-limit ticket, closed exactly once. */
class Hold {
  readonly #deps: RelayDeps;
  readonly #ticket: RateTicket;
  readonly reservation: Reservation;
  #closed = false;
  constructor(deps: RelayDeps, reservation: Reservation, ticket: RateTicket) {
    this.#deps = deps;
    this.reservation = reservation;
    this.#ticket = ticket;
  }
  async close(tokens: number): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deps.rates.settle(this.#ticket, tokens);
    if (tokens > 0) await this.#deps.ledger.settle(this.reservation, tokens);
    else await this.#deps.ledger.release(this.reservation);
  }
}

export class ChatRelay {
  readonly #deps: RelayDeps;
  /** calls in flight, so shutdown can wait for their records after their sockets are gone */
  readonly #running = new Set<Promise<unknown>>();

  constructor(deps: RelayDeps) {
    this.#deps = deps;
  }

  /**
   * Runs the call. Non-streaming: returns the JSON body to send. Streaming, or when the
   * client left: writes or drops the answer itself and returns undefined. Before any byte
   * is sent, failures are thrown as GatewayError (the draft already carries any charge) and
   * the HTTP error handler records and answers them.
   */
  run(ctx: CallContext, req: ChatRequest, sink: StreamSink): Promise<string | undefined> {
    const running = this.#run(ctx, req, sink);
    this.#running.add(running);
    const forget = () => this.#running.delete(running);
    running.then(forget, forget);
    return running;
  }

  /**
   * Resolves when every call in flight has finished (and so queued its record). Shutdown
   * calls it after closing the connections: a cut call reaches its record a moment later.
   */
  async drain(): Promise<void> {
    while (this.#running.size) await Promise.allSettled([...this.#running]);
  }

  async #run(ctx: CallContext, req: ChatRequest, sink: StreamSink): Promise<string | undefined> {
    const { registry, ledger, rates } = this.#deps;
    const { auth, draft } = ctx;
    const stream = req.stream === true;
    draft.stream = stream;
    draft.publicModel = req.model;
    draft.params = recordedParams(req);

    const model = registry.resolve(auth.account.plan_id, req.model);
    if (!model)
      throw new GatewayError("model_not_found", {
        message: `The model '${req.model}' does not exist or your plan does not include it.`,
        param: "model",
      });
    draft.upstreamModel = model.upstreamModel;
    draft.provider = model.config.provider;

    const promptTokens = countPromptTokens(req.messages, req.tools ?? req.functions ?? req.response_format);
    const promptHold = promptReservation(promptTokens);
    const choices = req.n ?? 1;
    const asked = req.max_completion_tokens ?? req.max_tokens;
    const outputBound = asked ?? model.config.max_output_tokens;
    const plan = registry.plan(auth.account.plan_id);
    const wanted = promptHold + outputBound * choices;
    const safety = this.#deps.safety.settings(auth.account, plan);
    const answer: Answer = !stream
      ? "json"
      : !safety.enabled
        ? "sse"
        : safety.streaming === "reviewed"
          ? "reviewed"
          : "json";
    if (safety.enabled) {
      draft.safetyMode = answer === "reviewed" ? "reviewed" : "json";
      // Clients can tell a reviewed answer, and a stream answered as one JSON body (spec 4.2).
      ctx.setHeaders(
        stream
          ? { "x-content-safety": "on", "x-content-safety-stream": draft.safetyMode }
          : { "x-content-safety": "on" },
      );
    }

    const admitted = rates.admit(rateSubjects(auth.key, auth.account.id, plan), wanted);
    ctx.setHeaders(rateHeaders(admitted.state));
    if (!admitted.ok) {
      const seconds = Math.max(1, Math.ceil(admitted.retryAfterMs / 1000));
      throw new GatewayError(admitted.kind === "requests" ? "rate_limited_requests" : "rate_limited_tokens", {
        headers: { "retry-after": String(seconds), "retry-after-ms": String(admitted.retryAfterMs) },
      });
    }

    const reserved = await ledger.reserve(
      {
        accountId: auth.account.id,
        accountQuota: auth.account.quota_tokens ?? plan?.quota_tokens ?? 0,
        accountUsed: auth.account.used_tokens,
        keyId: auth.key.id,
        keyLimit: auth.key.limit_tokens,
        keyUsed: auth.key.used_tokens,
      },
      wanted,
      promptHold + Math.min(MIN_OUTPUT_TOKENS, outputBound) * choices,
    );
    if (!reserved.ok) {
      rates.settle(admitted.ticket, 0); // the request counts; its tokens were never used
      throw new GatewayError(reserved.reason === "key_limit" ? "key_limit_exceeded" : "quota_exceeded", {
        message:
          reserved.reason === "key_limit"
            ? `This API key's token limit cannot cover this request (${reserved.remaining} tokens left).`
            : `The account's token quota cannot cover this request (${reserved.remaining} tokens left).`,
      });
    }
    const hold = new Hold(this.#deps, reserved.reservation, admitted.ticket);

    // The upstream may never produce more than was reserved: send the bound it must respect.
    const outputLimit = Math.floor((hold.reservation.tokens - promptHold) / choices);
    const body = forwardedBody(req);
    // Exactly one bound goes upstream, the reserved one: a second, larger one left in the
    // body could let an upstream that honours it produce more than was held.
    const bound = req.max_completion_tokens !== undefined ? "max_completion_tokens" : "max_tokens";
    delete body.max_tokens;
    delete body.max_completion_tokens;
    body[bound] = outputLimit;
    if (answer === "json") delete body.stream_options;

    const upstream = { model: model.upstreamModel, body, signal: ctx.clientSignal };
    try {
      if (safety.enabled && this.#deps.safety.reviewInput) {
        const passed = await this.#reviewInput(ctx, req, hold);
        if (!passed) return undefined; // the client left during the review
      }
      if (answer === "sse") return await this.#stream(ctx, req, model, upstream, sink, hold, promptTokens);
      if (answer === "reviewed")
        return await this.#reviewedStream(ctx, req, model, upstream, sink, hold, promptTokens);
      return await this.#complete(ctx, req, model, upstream, hold, promptTokens, safety.enabled);
    } finally {
      // Whatever happened, the reservation is closed (a no-op if a path closed it already).
      await hold.close(draft.totalTokens);
    }
  }

  async #complete(
    ctx: CallContext,
    req: ChatRequest,
    model: ResolvedModel,
    upstream: { model: string; body: Record<string, unknown>; signal: AbortSignal },
    hold: Hold,
    promptTokens: number,
    review: boolean,
  ): Promise<string | undefined> {
    const { draft } = ctx;
    const started = performance.now();
    let completion: Awaited<ReturnType<typeof model.provider.complete>>;
    try {
      completion = await model.provider.complete(upstream);
      this.#observeUpstream(model, started, "ok");
    } catch (err) {
      this.#observeUpstream(model, started, "error");
      if (ctx.clientSignal.aborted) {
        // The client left before the answer: charge the prompt the upstream already read.
        draft.setUsage(promptTokens, 0, "estimated");
        await this.#finish(ctx, hold, CLIENT_GONE);
        return undefined;
      }
      throw upstreamFailure(err);
    }
    draft.markFirstToken();
    const usage = validUsage(completion.usage);
    if (usage) draft.setUsage(usage.prompt_tokens, usage.completion_tokens, "upstream");
    else {
      let text = "";
      for (const c of completion.choices) text += choiceText(c.message);
      draft.setUsage(promptTokens, countText(text), "estimated");
    }
    completion.id = completionId(draft.requestId);
    completion.object = "chat.completion";
    completion.created ??= Math.floor(draft.startedAt / 1000);
    completion.model = req.model;
    completion.usage = {
      ...(usage ?? {}),
      prompt_tokens: draft.promptTokens,
      completion_tokens: draft.completionTokens,
      total_tokens: draft.totalTokens,
    };
    if (review) {
      let outcome: ReviewOutcome;
      try {
        let text = "";
        for (const c of completion.choices) text += `${choiceText(c.message)}\n`;
        outcome = await this.#review(ctx, "output", text, lastUserText(req.messages));
      } catch (err) {
        if (!ctx.clientSignal.aborted) throw err; // safety_unavailable; the usage stays charged
        await this.#finish(ctx, hold, CLIENT_GONE);
        return undefined;
      }
      if (outcome.flagged) {
        await this.#finish(ctx, hold, {
          status: "content_filter",
          httpStatus: 200,
          errorCode: "content_filter",
        });
        return JSON.stringify(withheldCompletion(completion, outcome));
      }
    }
    await this.#finish(ctx, hold, { status: "ok", httpStatus: 200 });
    return JSON.stringify(completion);
  }

  /**
   * Reviews the caller's messages before anything goes upstream. A flag refuses the call (400,
   * nothing charged). Returns false when the client left during the review (recorded here).
   */
  async #reviewInput(ctx: CallContext, req: ChatRequest, hold: Hold): Promise<boolean> {
    let text = "";
    for (const m of req.messages) text += `${messageText(m.content).text}\n`;
    let outcome: ReviewOutcome;
    try {
      outcome = await this.#review(ctx, "input", text, undefined);
    } catch (err) {
      if (!ctx.clientSignal.aborted) throw err;
      await this.#finish(ctx, hold, CLIENT_GONE);
      return false;
    }
    if (outcome.flagged)
      throw new GatewayError("content_filter", {
        message: `The request was blocked by the content safety review (${outcome.categories.join(", ")}).`,
        param: "messages",
      });
    return true;
  }

  /**
   * One review, noted on the draft (verdict, categories, time). A review that cannot finish
   * becomes 503 safety_unavailable; when the client left, its abort reason is rethrown.
   */
  async #review(ctx: CallContext, stage: ReviewStage, text: string, context: string | undefined) {
    const { draft } = ctx;
    const started = performance.now();
    try {
      const outcome = await this.#deps.safety.review(stage, text, context, ctx.clientSignal);
      if (outcome.flagged) {
        draft.safetyVerdict = "flagged";
        draft.safetyCategories = outcome.categories;
      } else draft.safetyVerdict ??= "pass";
      return outcome;
    } catch (err) {
      if (ctx.clientSignal.aborted) throw err;
      draft.safetyVerdict = "error";
      this.#deps.logger.warn(
        { request_id: draft.requestId, stage, reason: err instanceof Error ? err.message : String(err) },
        "content safety review failed; the call fails closed",
      );
      throw new GatewayError("safety_unavailable", { cause: err });
    } finally {
      draft.safetyMs = (draft.safetyMs ?? 0) + Math.round(performance.now() - started);
    }
  }

  async #stream(
    ctx: CallContext,
    req: ChatRequest,
    model: ResolvedModel,
    upstream: { model: string; body: Record<string, unknown>; signal: AbortSignal },
    sink: StreamSink,
    hold: Hold,
    promptTokens: number,
  ): Promise<string | undefined> {
    const { draft } = ctx;
    const clientWantsUsage = req.stream_options?.include_usage === true;
    const stamp = new ChunkStamp(draft, req.model);
    const started = performance.now();
    const iterator = model.provider.stream(upstream)[Symbol.asyncIterator]();
    let usage: ChatUsage | undefined;
    let delivered = "";
    let streaming = false;
    try {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        const chunk = next.value;
        if (!streaming) {
          // The first chunk arrived: only now is the answer committed to streaming.
          sink.start();
          streaming = true;
          draft.markFirstToken();
        }
        const reported = validUsage(chunk.usage);
        if (reported) usage = reported;
        if (!chunk.choices.length) {
          if (!clientWantsUsage) continue; // the usage chunk we asked for on our own behalf
        } else {
          for (const c of chunk.choices) delivered += choiceText(c.delta);
        }
        const wait = sink.event(stamp.chunk(chunk, clientWantsUsage ? (reported ?? null) : undefined));
        if (wait) await wait;
      }
      this.#observeUpstream(model, started, "ok");
    } catch (err) {
      this.#observeUpstream(model, started, "error");
      // Tokens delivered so far are charged, whoever broke off.
      draft.setUsage(promptTokens, countText(delivered), "estimated");
      if (ctx.clientSignal.aborted) {
        await this.#finish(ctx, hold, CLIENT_GONE);
        return undefined;
      }
      const failure = upstreamFailure(err);
      if (!streaming) {
        if (!delivered) draft.setUsage(0, 0, "none");
        throw failure;
      }
      return this.#failMidStream(ctx, hold, sink, failure, "upstream_error");
    }
    if (!streaming) sink.start();
    if (usage) draft.setUsage(usage.prompt_tokens, usage.completion_tokens, "upstream");
    else draft.setUsage(promptTokens, countText(delivered), "estimated");
    // The client asked for usage and the upstream gave none: ours goes out, marked by the record.
    return this.#endStream(ctx, hold, sink, stamp, clientWantsUsage && !usage, {
      status: "ok",
      httpStatus: 200,
    });
  }

  /**
   * Reviewed streaming (opt-in, `safety.streaming: reviewed`): upstream chunks are held until
   * the text they carry has passed a review, then released together, a sentence or a bounded
   * stretch at a time. The response does not start before the first segment passed; a flag
   * stops the upstream and ends the stream with `finish_reason: "content_filter"`.
   */
  async #reviewedStream(
    ctx: CallContext,
    req: ChatRequest,
    model: ResolvedModel,
    upstream: { model: string; body: Record<string, unknown>; signal: AbortSignal },
    sink: StreamSink,
    hold: Hold,
    promptTokens: number,
  ): Promise<string | undefined> {
    const { draft } = ctx;
    const clientWantsUsage = req.stream_options?.include_usage === true;
    const stamp = new ChunkStamp(draft, req.model);
    const context = lastUserText(req.messages);
    const segmenter = new Segmenter(this.#deps.safety.segmentTokens);
    // A flag or a failed review must stop the upstream too, not only a client that left.
    const stop = new AbortController();
    const started = performance.now();
    const iterator = model.provider
      .stream({ ...upstream, signal: AbortSignal.any([upstream.signal, stop.signal]) })
      [Symbol.asyncIterator]();
    const held: string[] = [];
    let heldText = "";
    let releasedTail = "";
    let received = "";
    const choices = new Set<number>();
    let usage: ChatUsage | undefined;
    let streaming = false;
    let flagged: ReviewOutcome | undefined;

    /** Reviews the held text, with the tail of what went before, and releases it if it passed. */
    const release = async (): Promise<boolean> => {
      if (heldText.trim()) {
        const outcome = await this.#review(ctx, "output", releasedTail + heldText, context);
        if (outcome.flagged) {
          flagged = outcome;
          return false;
        }
      }
      if (!streaming) {
        sink.start();
        streaming = true;
        draft.markFirstToken();
      }
      for (const event of held) {
        const wait = sink.event(event);
        if (wait) await wait;
      }
      held.length = 0;
      releasedTail = (releasedTail + heldText).slice(-REVIEW_OVERLAP_CHARS);
      heldText = "";
      return true;
    };
    const stopUpstream = async () => {
      stop.abort();
      await iterator.return?.(undefined)?.catch(() => undefined);
    };

    try {
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
        const chunk = next.value;
        const reported = validUsage(chunk.usage);
        if (reported) usage = reported;
        if (!chunk.choices.length) {
          if (!clientWantsUsage) continue;
        } else {
          for (const c of chunk.choices) {
            choices.add(c.index);
            const text = choiceText(c.delta);
            received += text;
            heldText += text;
          }
        }
        held.push(stamp.chunk(chunk, clientWantsUsage ? (reported ?? null) : undefined));
        if (segmenter.ready(heldText) && !(await release())) break;
      }
      if (!flagged) await release(); // the rest of the output, once the upstream finished
      this.#observeUpstream(model, started, "ok");
    } catch (err) {
      await stopUpstream();
      const failure = upstreamFailure(err);
      if (failure.code !== "safety_unavailable") this.#observeUpstream(model, started, "error");
      // What the upstream produced is charged, released or not: it did the work.
      draft.setUsage(promptTokens, countText(received), "estimated");
      if (ctx.clientSignal.aborted) {
        await this.#finish(ctx, hold, CLIENT_GONE);
        return undefined;
      }
      if (!streaming) {
        if (!received) draft.setUsage(0, 0, "none");
        throw failure;
      }
      return this.#failMidStream(
        ctx,
        hold,
        sink,
        failure,
        failure.code === "safety_unavailable" ? "error" : "upstream_error",
      );
    }

    const verdict = flagged as ReviewOutcome | undefined;
    if (verdict) await stopUpstream();
    // A flag at the very end comes after the upstream's usage; one earlier stopped it first.
    if (usage) draft.setUsage(usage.prompt_tokens, usage.completion_tokens, "upstream");
    else draft.setUsage(promptTokens, countText(received), "estimated");
    if (!streaming) sink.start();
    if (verdict)
      await sink.event(
        stamp.event({
          choices: [...(choices.size ? choices : [0])].map((index) => ({
            index,
            delta: {},
            logprobs: null,
            finish_reason: "content_filter",
          })),
          safety: safetyExtension(verdict),
        }),
      );
    // The client asked for usage and the upstream's never reached it (stopped, or none): ours.
    return this.#endStream(
      ctx,
      hold,
      sink,
      stamp,
      clientWantsUsage && (verdict !== undefined || !usage),
      verdict
        ? { status: "content_filter", httpStatus: 200, errorCode: "content_filter" }
        : { status: "ok", httpStatus: 200 },
    );
  }

  /**
   * The end of a stream that went well: our own usage chunk when one is owed, the record, then
   * `[DONE]`. A record that cannot be written makes it an error event and no `[DONE]`: not
   * recorded, not complete.
   */
  async #endStream(
    ctx: CallContext,
    hold: Hold,
    sink: StreamSink,
    stamp: ChunkStamp,
    sendUsage: boolean,
    outcome: Parameters<CallDraft["finish"]>[0],
  ): Promise<undefined> {
    const { draft } = ctx;
    if (sendUsage)
      await sink.event(
        stamp.event({
          choices: [],
          usage: {
            prompt_tokens: draft.promptTokens,
            completion_tokens: draft.completionTokens,
            total_tokens: draft.totalTokens,
          },
        }),
      );
    try {
      await this.#finish(ctx, hold, outcome);
    } catch (err) {
      await sink.event(JSON.stringify(upstreamFailure(err).toBody()));
      sink.end();
      return undefined;
    }
    await sink.event("[DONE]");
    sink.end();
    return undefined;
  }

  /**
   * A failure after the stream began: it travels as an SSE error event and the stream ends
   * without [DONE] (also when the record cannot be written: the writer has logged that).
   */
  async #failMidStream(
    ctx: CallContext,
    hold: Hold,
    sink: StreamSink,
    failure: GatewayError,
    status: CallStatus,
  ): Promise<undefined> {
    await this.#finish(ctx, hold, { status, httpStatus: failure.status, errorCode: failure.code }).catch(
      () => undefined,
    );
    await sink.event(JSON.stringify(failure.toBody()));
    sink.end();
    return undefined;
  }

  /** Settles the reservation with the draft's usage and commits the record. */
  async #finish(ctx: CallContext, hold: Hold, outcome: Parameters<CallDraft["finish"]>[0]): Promise<void> {
    const { draft } = ctx;
    await hold.close(draft.totalTokens);
    if (draft.totalTokens && draft.publicModel) {
      this.#deps.metrics.tokens.inc({ model: draft.publicModel, kind: "prompt" }, draft.promptTokens);
      this.#deps.metrics.tokens.inc({ model: draft.publicModel, kind: "completion" }, draft.completionTokens);
    }
    try {
      await this.#deps.records.write(draft.finish(outcome));
    } catch (err) {
      // Without its record a call is not complete: the client is told so. The charge stays
      // in the ledger (the upstream did the work), which errs against overspending.
      throw new GatewayError("store_unavailable", { cause: err });
    }
  }

  #observeUpstream(model: ResolvedModel, started: number, outcome: string): void {
    this.#deps.metrics.upstreamSeconds.observe(
      { provider: model.config.provider, outcome },
      (performance.now() - started) / 1000,
    );
  }
}

/** Tokens held for the prompt: the local count plus the margin for other tokenizers. */
export function promptReservation(promptTokens: number): number {
  return Math.ceil(promptTokens * PROMPT_MARGIN);
}

/**
 * What every chunk of one streamed answer carries: our completion id, the public model, and
 * one `created` (the upstream's first, else the call's start).
 */
class ChunkStamp {
  readonly #id: string;
  readonly #model: string;
  readonly #startedAt: number;
  #created: number | undefined;

  constructor(draft: CallDraft, model: string) {
    this.#id = completionId(draft.requestId);
    this.#model = model;
    this.#startedAt = draft.startedAt;
  }

  /** An upstream chunk restamped; `usage` undefined removes it, null sends `usage: null`. */
  chunk(chunk: ChatCompletionChunk, usage: ChatUsage | null | undefined): string {
    if (usage === undefined) delete chunk.usage;
    else chunk.usage = usage;
    this.#created ??= chunk.created ?? Math.floor(this.#startedAt / 1000);
    chunk.id = this.#id;
    chunk.object = "chat.completion.chunk";
    chunk.created = this.#created;
    chunk.model = this.#model;
    return JSON.stringify(chunk);
  }

  /** A chunk of the gateway's own (a finish or usage chunk), in the same answer. */
  event(fields: { choices: unknown[]; [extra: string]: unknown }): string {
    this.#created ??= Math.floor(this.#startedAt / 1000);
    return JSON.stringify({
      id: this.#id,
      object: "chat.completion.chunk",
      created: this.#created,
      model: this.#model,
      ...fields,
    });
  }
}

/** The text of the caller's last user message: the context a judge reads an answer in. */
function lastUserText(messages: ChatRequest["messages"]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i]!.role === "user") return messageText(messages[i]!.content).text;
  return undefined;
}

/** The documented extension field of an answer content safety withheld. */
function safetyExtension(outcome: ReviewOutcome) {
  return { verdict: "flagged", stage: "output", categories: outcome.categories };
}

/** A flagged completion as the client gets it: usage and ids kept, every model text replaced. */
function withheldCompletion(completion: ChatCompletion, outcome: ReviewOutcome) {
  return {
    id: completion.id,
    object: "chat.completion",
    created: completion.created,
    model: completion.model,
    choices: completion.choices.map((c) => ({
      index: c.index,
      message: { role: "assistant", content: WITHHELD_MESSAGE, refusal: null },
      logprobs: null,
      finish_reason: "content_filter",
    })),
    usage: completion.usage,
    safety: safetyExtension(outcome),
  };
}

function completionId(requestId: string): string {
  return `chatcmpl-${requestId.slice(requestId.indexOf("_") + 1)}`;
}

function forwardedBody(req: ChatRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { messages: req.messages };
  for (const field of FORWARDED_FIELDS) {
    const value = req[field];
    if (value !== undefined) body[field] = value;
  }
  return body;
}

function recordedParams(req: ChatRequest): string | null {
  const params: Record<string, unknown> = {};
  let any = false;
  for (const p of RECORDED_PARAMS) {
    if (req[p] !== undefined) {
      params[p] = req[p];
      any = true;
    }
  }
  return any ? JSON.stringify(params) : null;
}

/** Every text a choice carries, for counting: content, refusal, tool-call names and arguments. */
function choiceText(part: Record<string, unknown> | undefined): string {
  if (!part) return "";
  let text = "";
  if (typeof part.content === "string") text += part.content;
  if (typeof part.refusal === "string") text += part.refusal;
  if (Array.isArray(part.tool_calls))
    for (const call of part.tool_calls) {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } }).function;
      if (typeof fn?.name === "string") text += fn.name;
      if (typeof fn?.arguments === "string") text += fn.arguments;
    }
  return text;
}

function validUsage(usage: unknown): ChatUsage | undefined {
  if (!usage || typeof usage !== "object") return undefined;
  const u = usage as Record<string, unknown>;
  const ok = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;
  if (!ok(u.prompt_tokens) || !ok(u.completion_tokens)) return undefined;
  const total = (u.prompt_tokens as number) + (u.completion_tokens as number);
  return { ...(u as ChatUsage), total_tokens: total };
}

/** What an upstream failure means for the client: 502, 504, or 400 when the upstream refused the request. */
export function upstreamFailure(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof UpstreamError) {
    if (err.failure === "timeout")
      return new GatewayError("upstream_timeout", { message: err.message, cause: err });
    if (err.failure === "status" && (err.status === 400 || err.status === 422))
      return new GatewayError("upstream_bad_request", { message: err.message, cause: err });
    return new GatewayError("upstream_error", { message: err.message, cause: err });
  }
  if (err instanceof DOMException && err.name === "TimeoutError")
    return new GatewayError("upstream_timeout", { cause: err });
  return new GatewayError("internal_error", { cause: err });
}
