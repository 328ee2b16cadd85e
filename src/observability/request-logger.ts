// Each request's logger (Fastify's `request.log`), made when the request first logs, and the
// one line every request gets when it ends. Fastify gives every request a pino child bound to
// its id at once, and making one (its bindings serialised and run through the redaction) was
// 0.8 % of the gateway's busy time under load, and 2 KB of garbage a request, for requests
// that mostly log nothing: the request's line is written by the parent logger with the id in
// it (src/app.ts). docs/observability.md lists its fields.
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions, Level, Logger } from "pino";

/** What every request's line says. */
export interface RequestFacts {
  request_id: string;
  method: string;
  /** the route's pattern, or "unmatched" */
  route: string;
  /** the HTTP status sent; 499 when the client left first */
  status: number;
  ms: number;
  account: string | undefined;
  key: string | undefined;
}

/** What a relayed call adds: its record as far as it is filled (src/records/draft.ts). */
export interface LoggedCall {
  api: string;
  /** the relay ran it (false: refused before, e.g. an unknown key) */
  relayed: boolean;
  publicModel: string | null;
  provider: string | null;
  upstreamModel: string | null;
  promptTokens: number;
  completionTokens: number;
  costNanos: number;
  ttftMs: number | null;
  attempts: readonly unknown[];
  outcome: { status: string; errorCode?: string | null | undefined } | null;
}

/**
 * The fields of a request's line: the request's own, and for a relayed call its API, model,
 * provider, usage, cost and outcome (a stream answered 200 may still have failed). No content,
 * no secret: these are the record's figures.
 */
export function requestLine(facts: RequestFacts, call: LoggedCall | null): object {
  if (!call?.relayed) return facts;
  return {
    ...facts,
    api: call.api,
    model: call.publicModel,
    provider: call.provider,
    upstream_model: call.upstreamModel,
    attempts: call.attempts.length,
    prompt_tokens: call.promptTokens,
    completion_tokens: call.completionTokens,
    // nanodollars as dollars, as src/prices/usd.ts does (a layer this one may not import)
    cost_usd: call.costNanos / 1e9,
    ttft_ms: call.ttftMs,
    call_status: call.outcome?.status ?? null,
    error_code: call.outcome?.errorCode ?? null,
  };
}

type Args = [obj: unknown, msg?: string, ...args: unknown[]];

class RequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #made(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #log(level: Level, args: Args): void {
    if (!(this.#child ?? this.#parent).isLevelEnabled(level)) return;
    (this.#made()[level] as (...args: Args) => void)(...args);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#made().level = level;
  }

  fatal(...args: Args): void {
    this.#log("fatal", args);
  }
  error(...args: Args): void {
    this.#log("error", args);
  }
  warn(...args: Args): void {
    this.#log("warn", args);
  }
  info(...args: Args): void {
    this.#log("info", args);
  }
  debug(...args: Args): void {
    this.#log("debug", args);
  }
  trace(...args: Args): void {
    this.#log("trace", args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#made().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory` for a pino logger. */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  return new RequestLogger(parent as Logger, bindings, options) as unknown as FastifyBaseLogger;
}
