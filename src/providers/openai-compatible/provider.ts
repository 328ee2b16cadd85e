// Adapter for any server speaking OpenAI's chat completions API (OpenAI, vLLM, Ollama,
// llama.cpp, LM Studio, …). One keep-alive undici Pool per provider; never a connection per
// request.
import { Pool } from "undici";
import type { ProviderConfig } from "../../config/schema.ts";
import { Deadline } from "../deadline.ts";
import { sanitizeUpstreamMessage } from "../sanitize.ts";
import { readSse } from "../sse-reader.ts";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type Provider,
  UpstreamError,
  type UpstreamRequest,
} from "../types.ts";

type Config = Extract<ProviderConfig, { type: "openai-compatible" }>;

const MAX_ERROR_BODY = 64 * 1024;

export class OpenAICompatibleProvider implements Provider {
  readonly id: string;
  readonly #pool: Pool;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  readonly #totalMs: number;

  constructor(config: Config, env: Record<string, string | undefined>) {
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
    const apiKey = config.api_key_env ? env[config.api_key_env] : undefined;
    this.#headers = {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...config.headers,
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    };
  }

  async complete(request: UpstreamRequest): Promise<ChatCompletion> {
    const { body, deadline } = await this.#send(request, false);
    let parsed: unknown;
    try {
      parsed = await body.json();
    } catch (err) {
      throw this.#failure(err, deadline.signal, "the upstream's reply is not JSON");
    } finally {
      deadline.end();
    }
    if (!isCompletion(parsed))
      throw new UpstreamError("malformed", "the upstream's reply is not a chat completion");
    return parsed;
  }

  async *stream(request: UpstreamRequest): AsyncGenerator<ChatCompletionChunk> {
    const { body, deadline } = await this.#send(request, true);
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
        let chunk: any;
        try {
          chunk = JSON.parse(event.data);
        } catch {
          throw new UpstreamError("malformed", "the upstream sent a stream event that is not JSON");
        }
        if (chunk?.error) throw upstreamStatusError(undefined, chunk);
        if (!Array.isArray(chunk?.choices))
          throw new UpstreamError("malformed", "the upstream sent a stream event that is not a chunk");
        yield chunk as ChatCompletionChunk;
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

  async #send(request: UpstreamRequest, stream: boolean) {
    const deadline = new Deadline(request.signal, this.#totalMs);
    const payload: Record<string, unknown> = { model: request.model, ...request.body };
    if (stream) {
      payload.stream = true;
      // Always ask for usage: billing uses the upstream's count, not a local guess.
      payload.stream_options = {
        ...(request.body.stream_options as object | undefined),
        include_usage: true,
      };
    }
    let response: Awaited<ReturnType<Pool["request"]>>;
    try {
      response = await this.#pool.request({
        path: this.#path,
        method: "POST",
        headers: this.#headers,
        body: JSON.stringify(payload),
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
      throw upstreamStatusError(response.statusCode, parsed);
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

function upstreamStatusError(status: number | undefined, parsed: any): UpstreamError {
  const raw = typeof parsed?.error?.message === "string" ? parsed.error.message : "";
  const detail = raw ? `: ${sanitizeUpstreamMessage(raw)}` : "";
  const message = status
    ? `the upstream answered HTTP ${status}${detail}`
    : `the upstream reported an error${detail}`;
  return new UpstreamError("status", message, status === undefined ? {} : { status });
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

function isCompletion(value: any): value is ChatCompletion {
  return typeof value === "object" && value !== null && Array.isArray(value.choices);
}
