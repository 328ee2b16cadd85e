// What adapters throw when an upstream call fails. The adapter, which knows its upstream,
// decides whether another attempt could succeed; routing reads that, and the error catalog
// (src/errors/upstream.ts) decides what the client is told.

export type UpstreamFailure =
  /** the upstream answered an HTTP error */
  | "status"
  /** a connect, first-byte, idle or total timeout */
  | "timeout"
  /** the connection failed or broke */
  | "network"
  /** the upstream's reply was not what the protocol promises */
  | "malformed";

export interface UpstreamErrorOptions {
  status?: number | undefined;
  /** whether the same request could succeed on another attempt; by default from the failure */
  retryable?: boolean | undefined;
  /** how long the upstream asked us to wait (Retry-After), in milliseconds */
  retryAfterMs?: number | undefined;
  /** what the upstream said of its error, already sanitised: passed on for client errors */
  detail?:
    | {
        message?: string | undefined;
        code?: string | undefined;
        param?: string | undefined;
        /** the capability the upstream refused, for clients whose fallbacks key on it (GatewayError.capability) */
        capability?: string | undefined;
      }
    | undefined;
  /**
   * What the upstream refused, where it said so: the gateway's provider key (401/403, and
   * Gemini's 400 API_KEY_INVALID), or the prompt, by its own content filter (Azure's 400
   * `content_filter`). Each has its own answer to the client (src/errors/upstream.ts).
   */
  refused?: "key" | "prompt" | undefined;
  cause?: unknown;
}

/** HTTP statuses that say "not now" rather than "not this request". */
const RETRYABLE_STATUS = new Set([408, 409, 429, 500, 502, 503, 504, 529]);

/** `message` is already safe to show a client. */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  readonly failure: UpstreamFailure;
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly detail: UpstreamErrorOptions["detail"];
  readonly refused: UpstreamErrorOptions["refused"];

  constructor(failure: UpstreamFailure, message: string, options: UpstreamErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.failure = failure;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.detail = options.detail;
    this.refused = options.refused;
    this.retryable =
      options.retryable ??
      (failure === "status" ? options.status === undefined || RETRYABLE_STATUS.has(options.status) : true);
  }
}

/** Reads a Retry-After header (seconds, or an HTTP date) as milliseconds from now. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
