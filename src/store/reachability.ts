// Whether the store and Redis answer, as the gateway's own connections see them, logged once
// per change: a warning when one stops answering (without a stack: a refused or cut connection
// is a known failure, and its stack says nothing), an info line when it answers again. Before,
// every periodic job that met an outage (the revision poll four times a second, the cooldowns'
// reconnections, the lease) logged its own stack trace, several a second, for as long as it
// lasted. /readyz reports the same state (src/http/readiness.ts).
import type { Logger } from "pino";

/** Node's socket and DNS failures: the other end is not there, or went away. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
]);

/** What ioredis and pg say when a connection is down, as they word it (they set no code). */
const CONNECTION_MESSAGES = [
  /^Connection is closed\.?$/, // ioredis
  /^Stream isn't writeable/, // ioredis without its offline queue, while reconnecting
  /^Command timed out$/, // ioredis: no answer within commandTimeout
  /^Connection terminated/, // pg: "unexpectedly", "due to connection timeout"
  /^timeout exceeded when trying to connect$/, // pg's pool
  /^Client has encountered a connection error and is not queryable$/, // pg
];

/** True for an error that means the store or Redis could not be reached, not that it refused the work. */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string") {
    if (CONNECTION_CODES.has(code)) return true;
    // PostgreSQL's SQLSTATE class 08 (connection exception), and 57P01-57P03: the server is
    // shutting down or not yet accepting connections
    if (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[123]$/.test(code)) return true;
  }
  // several addresses tried (localhost: ::1, then 127.0.0.1), each refused
  if (err instanceof AggregateError)
    return err.errors.length > 0 && err.errors.every((e) => isConnectionFailure(e));
  if (err.name === "MaxRetriesPerRequestError") return true;
  if (CONNECTION_MESSAGES.some((re) => re.test(err.message))) return true;
  return err.cause !== undefined && isConnectionFailure(err.cause);
}

/**
 * One line saying what failed, for a log field or /readyz: the error's message (each address's
 * for a connection tried on several), with any credentials in a URL masked.
 */
export function failureText(err: unknown): string {
  let text: string;
  if (err instanceof AggregateError && !err.message) text = err.errors.map(failureText).join("; ");
  else if (err instanceof Error) text = err.message || String((err as { code?: unknown }).code ?? err.name);
  else text = String(err);
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, "$1***@")
    .replace(/\s+/g, " ")
    .slice(0, 300);
}

/**
 * An onError for work that meets the store or Redis now and then (periodic jobs): a connection
 * failure is at debug level, its outage being told once by the Reachability of what failed;
 * anything else is a warning with its stack, as a fault to look into.
 */
export function warnUnlessUnreachable(logger: Logger, message: string): (err: unknown) => void {
  return (err) => {
    if (isConnectionFailure(err)) logger.debug({ reason: failureText(err) }, message);
    else logger.warn({ err }, message);
  };
}

export type Dependency = "store" | "redis";

/**
 * Whether one dependency answers, from what the parts of the gateway that use it saw last: it
 * is unreachable while any part's last attempt failed, and reachable again once every such
 * part reached it. Each change is logged once.
 */
export class Reachability {
  readonly dependency: Dependency;
  readonly #logger: Logger;
  readonly #texts: { down: string; up: string };
  /** per part whose last attempt failed, what it met */
  readonly #failing = new Map<string, string>();
  #downSince = 0;

  constructor(dependency: Dependency, logger: Logger, texts: { down: string; up: string }) {
    this.dependency = dependency;
    this.#logger = logger;
    this.#texts = texts;
  }

  /** `part` could not reach the dependency. */
  failed(part: string, err: unknown): void {
    const reason = failureText(err);
    const wasReachable = this.#failing.size === 0;
    this.#failing.delete(part); // the newest reason last, where `status` reads it
    this.#failing.set(part, reason);
    if (!wasReachable) return;
    this.#downSince = Date.now();
    this.#logger.warn({ dependency: this.dependency, part, reason }, this.#texts.down);
  }

  /** `part` reached the dependency. */
  reached(part: string): void {
    if (!this.#failing.delete(part) || this.#failing.size) return;
    this.#logger.info(
      { dependency: this.dependency, unreachable_ms: Date.now() - this.#downSince },
      this.#texts.up,
    );
  }

  get reachable(): boolean {
    return this.#failing.size === 0;
  }

  /** "ok", or "unreachable: " and what the last failure met. */
  get status(): string {
    const reasons = [...this.#failing.values()];
    return reasons.length ? `unreachable: ${reasons[reasons.length - 1]}` : "ok";
  }
}
