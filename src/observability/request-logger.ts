// Each request's logger (Fastify's `request.log`), made when the request first logs. Fastify
// gives every request a pino child bound to its id at once, and making one (its bindings
// serialised and run through the redaction) was 0.8 % of the gateway's busy time under load,
// and 2 KB of garbage a request, for requests that mostly log nothing: the access line is
// written by the parent logger with the id in it (src/app.ts).
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions, Level, Logger } from "pino";

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
