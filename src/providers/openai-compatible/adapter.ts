// Adapter for any server speaking OpenAI's chat completions API (OpenAI, vLLM, Ollama,
// llama.cpp, LM Studio, …). One keep-alive undici Pool per provider; never a connection per
// request.
import { Pool } from "undici";
import { FORWARDED_FIELDS } from "../../apis/chat-completions/request.ts";
import { Deadline } from "../deadline.ts";
import { promptUpperBound } from "../prompt-bound.ts";
import { sanitizeUpstreamMessage, wireCode, wireParam } from "../sanitize.ts";
import { readSse } from "../sse-reader.ts";
import type { Chunk, Completion, Provider, UpstreamCall } from "../types.ts";
import { retryAfterMs, UpstreamError } from "../upstream-error.ts";
import type { OpenAICompatibleConfig } from "./config.ts";
import { chunkSchema, completionSchema, errorSchema, readUsage } from "./wire.ts";

const MAX_ERROR_BODY = 64 * 1024;

/** The request body for this upstream: the forwarded fields and exactly one output bound. */
export function wireBody(
  call: UpstreamCall,
  stream: boolean,
  setting: OpenAICompatibleConfig["output_bound_field"] = "auto",
  openai = false,
): Record<string, unknown> {
  const { request } = call;
  const body: Record<string, unknown> = { model: call.upstreamModel, messages: request.messages };
  for (const field of FORWARDED_FIELDS) {
    const value = request[field];
    if (value !== undefined) body[field] = value;
  }
  // Exactly one bound goes upstream, the reserved one: a second, larger one left in the body
  // could let an upstream that honours it produce more than was held.
  delete body.max_tokens;
  delete body.max_completion_tokens;
  body[boundField(call, setting, openai)] = call.outputBound;
  if (stream) {
    body.stream = true;
    // Always ask for usage: billing uses the upstream's count, not a local guess.
    body.stream_options = { ...request.stream_options, include_usage: true };
  } else delete body.stream_options;
  return body;
}

function boundField(
  call: UpstreamCall,
  field: OpenAICompatibleConfig["output_bound_field"],
  openai: boolean,
) {
  if (call.outputBoundField) return call.outputBoundField;
  if (field !== "auto") return field;
  if (call.request.max_completion_tokens !== undefined) return "max_completion_tokens";
  if (call.request.max_tokens !== undefined) return "max_tokens";
  return openai ? "max_completion_tokens" : "max_tokens";
}

/** OpenAI's own API, whose reasoning models take the bound only as max_completion_tokens. */
const OPENAI_HOST = "api.openai.com";

export class OpenAICompatibleProvider implements Provider {
  readonly id: string;
  readonly #pool: Pool;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  readonly #totalMs: number;
  readonly #boundField: OpenAICompatibleConfig["output_bound_field"];
  readonly #openai: boolean;

  constructor(config: OpenAICompatibleConfig, env: Record<string, string | undefined>) {
    this.id = config.id;
    const url = new URL(config.base_url);
    this.#path = `${url.pathname.replace(/\/+$/, "")}/chat/completions`;
    this.#pool = new Pool(url.origin, {
      connections: config.max_connections,
      connectTimeout: config.timeouts.connect_ms,
      headersTimeout: config.timeouts.first_byte_ms,
      bodyTimeout: config.timeouts.idle_ms,
      keepAliveTimeout: 30_000,
      pipelining: 1,
    });
    this.#totalMs = config.timeouts.total_ms;
    this.#boundField = config.output_bound_field;
    this.#openai = url.hostname === OPENAI_HOST;
    const apiKey = config.api_key_env ? env[config.api_key_env] : undefined;
    this.#headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...config.headers,
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    };
  }

  promptBound = promptUpperBound;

  async complete(call: UpstreamCall): Promise<Completion> {
    const { body, deadline } = await this.#send(call, false);
    let text: string;
    try {
      text = await body.text();
    } catch (err) {
      throw this.#failure(err, deadline.signal, "the upstream's reply broke off");
    } finally {
      deadline.end();
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new UpstreamError("malformed", "the upstream's reply is not JSON");
    }
    const parsed = completionSchema.safeParse(raw);
    if (!parsed.success)
      throw new UpstreamError("malformed", "the upstream's reply is not a chat completion");
    const completion = parsed.data as unknown as Completion;
    completion.usage = readUsage(parsed.data.usage);
    return completion;
  }

  async *stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    const { body, deadline } = await this.#send(call, true);
    let done = false;
    try {
      for await (const event of readSse(body)) {
        // After [DONE], read on to the body's end instead of leaving the loop: leaving it
        // destroys the body, which costs an AbortError and the keep-alive connection.
        if (done) continue;
        if (event.data === "[DONE]") {
          done = true;
          continue;
        }
        let raw: unknown;
        try {
          raw = JSON.parse(event.data);
        } catch {
          throw new UpstreamError("malformed", "the upstream sent a stream event that is not JSON");
        }
        // An error reported inside a 200 stream (vLLM, Azure and others do so).
        if ((raw as { error?: unknown } | null)?.error != null) {
          const error = errorSchema.safeParse(raw);
          throw statusError(undefined, error.success ? error.data : undefined, undefined);
        }
        const parsed = chunkSchema.safeParse(raw);
        if (!parsed.success)
          throw new UpstreamError("malformed", "the upstream sent a stream event that is not a chunk");
        const chunk = parsed.data as unknown as Chunk;
        chunk.usage = readUsage(parsed.data.usage);
        yield chunk;
      }
      // The stream ended without [DONE]: the upstream broke off.
      if (!done) throw new UpstreamError("network", "the upstream stream ended before it was complete");
    } catch (err) {
      throw this.#failure(err, deadline.signal, "the upstream stream broke off");
    } finally {
      deadline.end();
      // Stops the body when the consumer left early (client gone) or it failed.
      if (!body.destroyed) body.destroy();
    }
  }

  async #send(call: UpstreamCall, stream: boolean) {
    const deadline = new Deadline(call.signal, this.#totalMs);
    let response: Awaited<ReturnType<Pool["request"]>>;
    try {
      response = await this.#pool.request({
        path: this.#path,
        method: "POST",
        headers: this.#headers,
        body: JSON.stringify(wireBody(call, stream, this.#boundField, this.#openai)),
        signal: deadline.signal,
      });
    } catch (err) {
      deadline.end();
      throw this.#failure(err, deadline.signal, "cannot reach the upstream");
    }
    if (response.statusCode >= 400) {
      deadline.end();
      const text = await readBounded(response.body).catch(() => "");
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const error = errorSchema.safeParse(parsed);
      throw statusError(
        response.statusCode,
        error.success ? error.data : undefined,
        retryAfterMs(response.headers["retry-after"]),
      );
    }
    return { body: response.body, deadline };
  }

  /** Normalises whatever went wrong into an UpstreamError, or the caller's abort reason. */
  #failure(err: unknown, signal: AbortSignal, what: string): unknown {
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

function statusError(
  status: number | undefined,
  parsed: { error: { message?: string | undefined; code?: unknown; param?: unknown } } | undefined,
  retryAfter: number | undefined,
): UpstreamError {
  const raw = parsed?.error.message ?? "";
  const said = raw ? sanitizeUpstreamMessage(raw) : undefined;
  const message = status
    ? `the upstream answered HTTP ${status}${said ? `: ${said}` : ""}`
    : `the upstream reported an error${said ? `: ${said}` : ""}`;
  return new UpstreamError("status", message, {
    status,
    retryAfterMs: retryAfter,
    detail: { message: said, code: wireCode(parsed?.error.code), param: wireParam(parsed?.error.param) },
  });
}

async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of body) {
    parts.push(part);
    size += part.length;
    if (size > MAX_ERROR_BODY) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(parts).toString("utf8");
}
