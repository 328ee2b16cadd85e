// The HTTP side every networked adapter shares: one keep-alive undici Pool per provider (never
// a connection per request), the call's deadline, error bodies read within bounds, every way a
// call can break turned into an UpstreamError, and the provider's upstream keys taken in turn
// (./key-pool.ts). Adapters add only their wire format.

import type { z } from "zod";
import { retryAfterMs, UpstreamError } from "../errors/upstream-error.ts";
import type { Timeouts } from "./config-fields.ts";
import { Deadline } from "./deadline.ts";
import { type KeyFault, KeyPool } from "./key-pool.ts";
import { registerSecret } from "./secrets.ts";
import { readSse, type SseEvent } from "./sse-reader.ts";
import type { KeyState } from "./types.ts";
import { Pool, type PoolOptions } from "./undici-pool.ts";

const MAX_ERROR_BODY = 64 * 1024;

/**
 * What is read of an upstream's answer ahead of its consumer, in the body's buffer and again in
 * its socket's (undici's and Node's default: 64 KB each; TLS sockets take 16 KB): a stream
 * whose client does not read stops the upstream's socket once these are full, and each call
 * holds no more (a socket read of up to 64 KB past them). A consumer that keeps up never fills
 * them.
 */
const READ_AHEAD_BYTES = 16 * 1024;

type ResponseBody = Awaited<ReturnType<Pool["request"]>>["body"];
type ResponseHeaders = Awaited<ReturnType<Pool["request"]>>["headers"];

/** An answer whose status was a success: its body, still to be read, and the call's deadline. */
export interface Opened {
  body: ResponseBody;
  deadline: Deadline;
}

/**
 * Turns an HTTP error answer into the adapter's UpstreamError. `parsed` is the body as JSON
 * (undefined when it was not JSON); `retryAfter` what the headers asked us to wait.
 */
export type StatusReader = (status: number, parsed: unknown, retryAfter: number | undefined) => UpstreamError;

export interface HttpUpstreamConfig {
  base_url: string;
  max_connections: number;
  timeouts: Timeouts;
}

export class HttpUpstream {
  /** base_url's path, without a trailing slash: adapters append their endpoint */
  readonly basePath: string;
  readonly #pool: Pool;
  readonly #totalMs: number;
  readonly #headers: UpstreamHeaders;

  constructor(config: HttpUpstreamConfig, headers: UpstreamHeaders) {
    this.#headers = headers;
    const url = new URL(config.base_url);
    this.basePath = url.pathname.replace(/\/+$/, "");
    this.#pool = new Pool(url.origin, {
      connections: config.max_connections,
      connectTimeout: config.timeouts.connect_ms,
      headersTimeout: config.timeouts.first_byte_ms,
      bodyTimeout: config.timeouts.idle_ms,
      keepAliveTimeout: 30_000,
      pipelining: 1,
      // (undici passes it to net.connect, whose options its types leave out)
      connect: { highWaterMark: READ_AHEAD_BYTES } as PoolOptions["connect"],
    });
    this.#totalMs = config.timeouts.total_ms;
  }

  /**
   * POSTs `body` with the next key of the pool, and `extra` headers of this call; an HTTP
   * error status is thrown as `readStatus` describes it. A key the upstream rate-limits or
   * refuses cools down, and while a key the call has not tried is not cooling down, the call
   * is sent again at once with it: nothing has reached the client yet, and routing then sees
   * a failure only when the whole pool fails, so one key's trouble does not cool the
   * deployment. The keys' tries share the call's one deadline.
   */
  async post(
    path: string,
    body: string,
    signal: AbortSignal,
    readStatus: StatusReader,
    extra?: Record<string, string>,
  ): Promise<Opened> {
    const deadline = new Deadline(signal, this.#totalMs);
    const keys = this.#headers.keys;
    // made only when a key fails: most calls never need it
    let tried: Set<string> | undefined;
    for (;;) {
      const key = keys.pick(tried);
      const headers = this.#headers.of(key);
      try {
        const opened = await this.#open(
          path,
          extra ? { ...headers, ...extra } : headers,
          body,
          deadline,
          readStatus,
        );
        if (key !== undefined) keys.succeeded(key);
        return opened;
      } catch (err) {
        const fault = key === undefined ? undefined : keyFault(err);
        if (key === undefined || fault === undefined) {
          deadline.end();
          throw err;
        }
        keys.cool(key, fault, (err as UpstreamError).retryAfterMs);
        tried ??= new Set();
        tried.add(key);
        if (!keys.hasReady(tried) || deadline.signal.aborted) {
          deadline.end();
          throw err;
        }
      }
    }
  }

  async #open(
    path: string,
    headers: Record<string, string>,
    body: string,
    deadline: Deadline,
    readStatus: StatusReader,
  ): Promise<Opened> {
    let response: Awaited<ReturnType<Pool["request"]>>;
    try {
      response = await this.#pool.request({
        path,
        method: "POST",
        headers,
        body,
        signal: deadline.signal,
        highWaterMark: READ_AHEAD_BYTES,
      });
    } catch (err) {
      throw this.failure(err, deadline.signal, "cannot reach the upstream");
    }
    if (response.statusCode >= 400) {
      const text = await readBounded(response.body).catch(() => "");
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      throw readStatus(response.statusCode, parsed, retryAfterFrom(response.headers));
    }
    return { body: response.body, deadline };
  }

  /** The states of the provider's upstream keys, for the dashboard. */
  keyStates(): KeyState[] {
    return this.#headers.keys.states();
  }

  /** The whole body of a successful answer, as JSON. */
  async json(opened: Opened): Promise<unknown> {
    let text: string;
    try {
      text = await opened.body.text();
    } catch (err) {
      throw this.failure(err, opened.deadline.signal, "the upstream's reply broke off");
    } finally {
      opened.deadline.end();
    }
    return parseJson(text, "the upstream's reply is not JSON");
  }

  /**
   * The body's SSE events. A read failure becomes an UpstreamError; when the consumer stops
   * (done, failed or gone), the deadline ends and the body is destroyed. Consumers that have
   * seen the end should read on rather than leave: leaving destroys the body, which costs an
   * AbortError and the keep-alive connection.
   */
  events(opened: Opened): AsyncGenerator<SseEvent> {
    return readSse(opened.body, {
      failure: (err) => this.failure(err, opened.deadline.signal, "the upstream stream broke off"),
      done: () => {
        opened.deadline.end();
        if (!opened.body.destroyed) opened.body.destroy();
      },
    });
  }

  /** Normalises whatever went wrong into an UpstreamError, or the caller's abort reason. */
  failure(err: unknown, signal: AbortSignal, what: string): unknown {
    if (err instanceof UpstreamError) return err;
    if (signal.aborted) {
      const reason = signal.reason;
      if (reason instanceof DOMException && reason.name === "TimeoutError")
        return new UpstreamError("timeout", "the upstream did not finish within the total timeout", {
          cause: err,
        });
      return reason; // the relay's own reason (client gone, shutdown)
    }
    const code = (err as { code?: string }).code;
    if (code === "UND_ERR_CONNECT_TIMEOUT")
      return new UpstreamError("timeout", "connecting to the upstream timed out", { cause: err });
    if (code === "UND_ERR_HEADERS_TIMEOUT")
      return new UpstreamError("timeout", "the upstream did not start answering in time", { cause: err });
    if (code === "UND_ERR_BODY_TIMEOUT")
      return new UpstreamError("timeout", "the upstream went silent in the middle of its answer", {
        cause: err,
      });
    return new UpstreamError("network", what, { cause: err });
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }
}

/**
 * A provider's upstream keys in pool order: api_key_env's, api_keys_env's, then api_keys. A
 * variable named but not set (or empty) adds no key, as api_key_env always did: a provider
 * left without any key is called without one.
 */
export function configuredKeys(
  config: {
    api_key_env?: string | undefined;
    api_keys_env?: string[] | undefined;
    api_keys?: string[] | undefined;
  },
  env: Record<string, string | undefined>,
): string[] {
  const names = [...(config.api_key_env ? [config.api_key_env] : []), ...(config.api_keys_env ?? [])];
  const keys: string[] = [];
  for (const name of names) {
    const key = env[name];
    if (key) keys.push(key);
  }
  for (const key of config.api_keys ?? []) if (key) keys.push(key);
  return keys;
}

/**
 * The headers of every call to a provider: JSON in, JSON or SSE out, the API's own `fixed`
 * headers, the configured extras, and a key of its pool in the header `auth` says. Made once
 * per key, so a call only picks its set.
 */
export class UpstreamHeaders {
  readonly keys: KeyPool;
  readonly #keyless: Record<string, string>;
  readonly #byKey = new Map<string, Record<string, string>>();

  constructor(
    config: {
      headers: Record<string, string>;
      api_key_env?: string | undefined;
      api_keys_env?: string[] | undefined;
      api_keys?: string[] | undefined;
    },
    env: Record<string, string | undefined>,
    auth: (key: string) => Record<string, string>,
    fixed: Record<string, string> = {},
  ) {
    const keys = configuredKeys(config, env);
    for (const key of keys) registerSecret(key);
    // an extra header may carry a credential of its own (an organisation token, a gateway's key)
    for (const value of Object.values(config.headers)) registerSecret(value);
    this.#keyless = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...fixed,
      ...config.headers,
    };
    for (const key of keys) this.#byKey.set(key, { ...this.#keyless, ...auth(key) });
    this.keys = new KeyPool(keys);
  }

  /** The headers of a call with `key` (undefined: the pool has none). */
  of(key: string | undefined): Record<string, string> {
    return (key === undefined ? undefined : this.#byKey.get(key)) ?? this.#keyless;
  }
}

/**
 * What a failure says of the key it was sent with: a 429 is this key's rate limit or quota,
 * a refusal of the key (401, 403, Gemini's 400 API_KEY_INVALID) is this key's; anything else
 * is the upstream's or the request's, whatever the key.
 */
export function keyFault(err: unknown): KeyFault | undefined {
  if (!(err instanceof UpstreamError) || err.failure !== "status" || err.status === undefined)
    return undefined;
  if (err.status === 429) return "rate_limited";
  if (err.refused !== "key") return undefined;
  return err.status === 401 ? "unauthorized" : err.status === 403 ? "forbidden" : "key_invalid";
}

/**
 * How long the upstream asked us to wait: `retry-after-ms` (OpenAI, Azure), Azure's
 * `x-ms-retry-after-ms`, else `retry-after`.
 */
export function retryAfterFrom(headers: ResponseHeaders): number | undefined {
  for (const name of ["retry-after-ms", "x-ms-retry-after-ms"]) {
    const raw = headers[name];
    const ms = Number(Array.isArray(raw) ? raw[0] : raw);
    if (raw !== undefined && Number.isFinite(ms) && ms >= 0) return Math.round(ms);
  }
  return retryAfterMs(headers["retry-after"]);
}

export function parseJson(text: string, notJson: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError("malformed", notJson);
  }
}

export function parseShape<T>(schema: z.ZodType<T>, raw: unknown, notShape: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new UpstreamError("malformed", notShape);
  return parsed.data;
}

async function readBounded(body: ResponseBody): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of body as AsyncIterable<Buffer>) {
    parts.push(part);
    size += part.length;
    if (size > MAX_ERROR_BODY) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(parts).toString("utf8");
}
