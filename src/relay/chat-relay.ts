// One chat completion: resolve the model -> reserve tokens -> call upstream -> settle ->
// record -> answer. Every reservation is settled or released exactly once, on every path.
import type { AuthContext } from "../auth/key-cache.ts";
import { GatewayError } from "../errors/index.ts";
import { type RateLimiter, type RateTicket, rateHeaders, rateSubjects } from "../ledger/rate-limiter.ts";
import type { Ledger, Reservation } from "../ledger/types.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { Registry, ResolvedModel } from "../providers/registry.ts";
import { type ChatUsage, UpstreamError } from "../providers/types.ts";
import type { CallDraft } from "../records/draft.ts";
import type { RecordWriter } from "../records/writer.ts";
import { countPromptTokens, countText } from "../tokens/count.ts";
import { type ChatRequest, FORWARDED_FIELDS } from "./request-schema.ts";

/** The local prompt count is o200k; other tokenizers count somewhat more. Reserve for that. */
const PROMPT_MARGIN = 1.1;
/** the smallest answer worth sending upstream; below it the request is refused */
const MIN_OUTPUT_TOKENS = 16;
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
}

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
    if (!stream) delete body.stream_options;

    const upstream = { model: model.upstreamModel, body, signal: ctx.clientSignal };
    try {
      return stream
        ? await this.#stream(ctx, req, model, upstream, sink, hold, promptTokens)
        : await this.#complete(ctx, req, model, upstream, hold, promptTokens);
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
        await this.#finish(ctx, hold, {
          status: "client_disconnect",
          httpStatus: 499,
          errorCode: "client_disconnect",
        });
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
    await this.#finish(ctx, hold, { status: "ok", httpStatus: 200 });
    return JSON.stringify(completion);
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
    const id = completionId(draft.requestId);
    const started = performance.now();
    const iterator = model.provider.stream(upstream)[Symbol.asyncIterator]();
    let usage: ChatUsage | undefined;
    let delivered = "";
    let streaming = false;
    let created: number | undefined;
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
        if (clientWantsUsage) chunk.usage = reported ?? null;
        else delete chunk.usage;
        created ??= chunk.created ?? Math.floor(draft.startedAt / 1000);
        chunk.id = id;
        chunk.object = "chat.completion.chunk";
        chunk.created = created;
        chunk.model = req.model;
        const wait = sink.event(JSON.stringify(chunk));
        if (wait) await wait;
      }
      this.#observeUpstream(model, started, "ok");
    } catch (err) {
      this.#observeUpstream(model, started, "error");
      // Tokens delivered so far are charged, whoever broke off.
      draft.setUsage(promptTokens, countText(delivered), "estimated");
      if (ctx.clientSignal.aborted) {
        await this.#finish(ctx, hold, {
          status: "client_disconnect",
          httpStatus: 499,
          errorCode: "client_disconnect",
        });
        return undefined;
      }
      const failure = upstreamFailure(err);
      if (!streaming) {
        if (!delivered) draft.setUsage(0, 0, "none");
        throw failure;
      }
      // Mid-stream: the error travels as an SSE event and the stream ends without [DONE]
      // (also when the record cannot be written: the writer has logged that).
      await this.#finish(ctx, hold, {
        status: "upstream_error",
        httpStatus: failure.status,
        errorCode: failure.code,
      }).catch(() => undefined);
      await sink.event(JSON.stringify(failure.toBody()));
      sink.end();
      return undefined;
    }
    if (!streaming) sink.start();
    if (usage) draft.setUsage(usage.prompt_tokens, usage.completion_tokens, "upstream");
    else draft.setUsage(promptTokens, countText(delivered), "estimated");
    if (clientWantsUsage && !usage) {
      // The client asked for usage and the upstream gave none: send ours, marked by the record.
      await sink.event(
        JSON.stringify({
          id,
          object: "chat.completion.chunk",
          created: created ?? Math.floor(draft.startedAt / 1000),
          model: req.model,
          choices: [],
          usage: {
            prompt_tokens: draft.promptTokens,
            completion_tokens: draft.completionTokens,
            total_tokens: draft.totalTokens,
          },
        }),
      );
    }
    try {
      await this.#finish(ctx, hold, { status: "ok", httpStatus: 200 });
    } catch (err) {
      // Not recorded, so not complete: an error event and no [DONE].
      await sink.event(JSON.stringify(upstreamFailure(err).toBody()));
      sink.end();
      return undefined;
    }
    await sink.event("[DONE]");
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
