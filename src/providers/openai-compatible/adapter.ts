// Adapter for any server speaking OpenAI's chat completions API (OpenAI, vLLM, Ollama,
// llama.cpp, LM Studio, …), and the wire handling Azure OpenAI composes (../azure-openai).
// A Responses API call goes natively to OpenAI's Responses API where the upstream has it, or
// where it uses built-in tools the provider allows (./responses.ts).

import type { Chunk, Completion } from "../../domain/completion.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import { builtinAllowed } from "../builtin-tools.ts";
import { customToolsAsFunctions } from "../custom-tools.ts";
import { HttpUpstream, type StatusReader, UpstreamHeaders } from "../http-upstream.ts";
import { type PassthroughSettings, passthroughSettings } from "../passthrough.ts";
import { sanitizeUpstreamMessage, wireCode, wireParam } from "../sanitize.ts";
import { type StreamReader, streamChunks } from "../stream-loop.ts";
import type {
  EmbeddingCall,
  EmbeddingResult,
  KeyState,
  NativeRequest,
  Provider,
  UpstreamCall,
} from "../types.ts";
import type { OpenAICompatibleConfig } from "./config.ts";
import { embeddingsBody, readEmbeddings } from "./embeddings.ts";
import { openaiPromptBound, responsesBody, wireBody } from "./request.ts";
import { ResponsesStreamState, responseCompletion } from "./responses.ts";
import { errorSchema, readChunk, readCompletion, readUsage } from "./wire.ts";

/** OpenAI's own API, whose reasoning models take the bound only as max_completion_tokens. */
const OPENAI_HOST = "api.openai.com";

/** The operations of OpenAI's API the adapter calls, by their path under the base URL. */
export type OpenAIOperation = "chat/completions" | "embeddings";

/** Where and how an OpenAI-shaped upstream is called; Azure OpenAI differs in both. */
export interface OpenAIEndpoint {
  /** the request path (with its query) of one call of `operation` to `upstreamModel`, given base_url's path */
  path(basePath: string, upstreamModel: string, operation: OpenAIOperation): string;
  /** the headers that carry the upstream key */
  auth(key: string): Record<string, string>;
}

const OPENAI_ENDPOINT: OpenAIEndpoint = {
  path: (basePath, _model, operation) => `${basePath}/${operation}`,
  auth: (key) => ({ authorization: `Bearer ${key}` }),
};

export class OpenAICompatibleProvider implements Provider {
  readonly id: string;
  readonly #http: HttpUpstream;
  readonly #endpoint: OpenAIEndpoint;
  readonly #boundField: OpenAICompatibleConfig["output_bound_field"];
  readonly #openai: boolean;
  /** custom tools go as function tools (the server has no custom tools) */
  readonly #customAsFunctions: boolean;
  /** the built-in tools Responses API calls may use here (sent natively to {base_url}/responses) */
  readonly #builtinTools: ReadonlySet<string>;
  /** Responses API calls go natively to {base_url}/responses */
  readonly #responsesNative: boolean;
  readonly passthrough: PassthroughSettings;

  constructor(
    config: Omit<
      OpenAICompatibleConfig,
      "type" | "custom_tools" | "responses_builtin_tools" | "responses_api" | "strict" | "deny"
    > &
      Partial<
        Pick<
          OpenAICompatibleConfig,
          "custom_tools" | "responses_builtin_tools" | "responses_api" | "strict" | "deny"
        >
      >,
    env: Record<string, string | undefined>,
    endpoint: OpenAIEndpoint = OPENAI_ENDPOINT,
  ) {
    this.id = config.id;
    this.#http = new HttpUpstream(config, new UpstreamHeaders(config, env, endpoint.auth));
    this.#endpoint = endpoint;
    this.#boundField = config.output_bound_field;
    this.#openai = new URL(config.base_url).hostname === OPENAI_HOST;
    // Azure OpenAI composes this adapter without the setting: it runs OpenAI's models.
    const customTools = config.custom_tools ?? "native";
    this.#customAsFunctions = customTools === "function" || (customTools === "auto" && !this.#openai);
    // Azure OpenAI composes this adapter without the setting: its Responses API is not this one.
    this.#builtinTools = new Set(config.responses_builtin_tools ?? []);
    const responses = config.responses_api ?? "translate";
    this.#responsesNative = responses === "native" || (responses === "auto" && this.#openai);
    this.passthrough = passthroughSettings(config);
  }

  promptBound = openaiPromptBound;

  builtinTools(native: NativeRequest): ReadonlySet<string> {
    return native.api === "responses" ? this.#builtinTools : NO_TOOLS;
  }

  /**
   * Chat completions are this upstream's own API: a client's fields the gateway does not know
   * go on. A Responses call goes natively where the upstream has OpenAI's Responses API, or
   * uses a built-in tool this provider allows (which no chat completion can carry).
   */
  sendsNatively(native: NativeRequest): boolean {
    if (native.api === "chat.completions") return true;
    if (native.api !== "responses") return false;
    return (
      this.#responsesNative ||
      (native.builtinTools?.some((use) => builtinAllowed(use, this.#builtinTools)) ?? false)
    );
  }

  /** A Responses body sent natively keeps its custom tools: OpenAI's Responses API has them. */
  sendsCustomToolsAsFunctions(call: UpstreamCall): boolean {
    return this.#customAsFunctions && !this.#responsesOf(call);
  }

  /** The Responses body of a call this adapter sends natively; other calls are translated. */
  #responsesOf(call: UpstreamCall): NativeRequest | undefined {
    const native = call.native;
    return native?.api === "responses" && this.sendsNatively(native) ? native : undefined;
  }

  async complete(call: UpstreamCall): Promise<Completion> {
    const native = this.#responsesOf(call);
    if (native)
      return responseCompletion(await this.#http.json(await this.#sendResponses(call, native, false)));
    const raw = await this.#http.json(await this.#send(call, false));
    const parsed = readCompletion(raw);
    if (!parsed) throw new UpstreamError("malformed", "the upstream's reply is not a chat completion");
    const completion = parsed as unknown as Completion;
    completion.usage = readUsage(parsed.usage);
    return completion;
  }

  stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    const native = this.#responsesOf(call);
    if (native) return this.#responseChunks(call, native);
    return streamChunks(async () => this.#http.events(await this.#send(call, true)), CHAT_EVENTS);
  }

  #responseChunks(call: UpstreamCall, native: NativeRequest): AsyncGenerator<Chunk> {
    const state = new ResponsesStreamState();
    return streamChunks(async () => this.#http.events(await this.#sendResponses(call, native, true)), {
      get done() {
        return state.done;
      },
      read: (raw, event) => {
        if (raw === null || typeof raw !== "object" || Array.isArray(raw))
          throw new UpstreamError("malformed", "the upstream sent a stream event that is not an object");
        return state.read(event.event, raw as Record<string, unknown>);
      },
    });
  }

  #sendResponses(call: UpstreamCall, native: NativeRequest, stream: boolean) {
    return this.#http.post(
      `${this.#http.basePath}/responses`,
      JSON.stringify(responsesBody(call, native, stream)),
      call.signal,
      readStatus,
    );
  }

  #send(call: UpstreamCall, stream: boolean) {
    return this.#http.post(
      this.#endpoint.path(this.#http.basePath, call.upstreamModel, "chat/completions"),
      JSON.stringify(
        wireBody(
          this.#customAsFunctions ? { ...call, request: customToolsAsFunctions(call.request) } : call,
          stream,
          this.#boundField,
          this.#openai,
        ),
      ),
      call.signal,
      readStatus,
    );
  }

  /** OpenAI's embeddings take token ids, and so do the servers that copy its API (vLLM, …). */
  readonly embedsTokenIds = true;

  async embed(call: EmbeddingCall): Promise<EmbeddingResult> {
    const body = JSON.stringify(embeddingsBody(call, this.passthrough, this.id));
    const path = this.#endpoint.path(this.#http.basePath, call.upstreamModel, "embeddings");
    const raw = await this.#http.json(await this.#http.post(path, body, call.signal, readStatus));
    return readEmbeddings(raw, call.request.inputs.length);
  }

  keyStates(): KeyState[] {
    return this.#http.keyStates();
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

const NO_TOOLS: ReadonlySet<string> = new Set();

/** Chat completions events are chunks already: only their usage is put in our figures. */
const CHAT_EVENTS: StreamReader = {
  endMarker: "[DONE]",
  read(raw) {
    // An error reported inside a 200 stream (vLLM, Azure and others do so).
    if ((raw as { error?: unknown } | null)?.error != null) {
      const error = errorSchema.safeParse(raw);
      throw statusError(undefined, error.success ? error.data : undefined, undefined);
    }
    const parsed = readChunk(raw);
    if (!parsed) throw new UpstreamError("malformed", "the upstream sent a stream event that is not a chunk");
    const chunk = parsed as unknown as Chunk;
    chunk.usage = readUsage(parsed.usage);
    return [chunk];
  },
};

const readStatus: StatusReader = (status, parsed, retryAfter) => {
  const error = errorSchema.safeParse(parsed);
  return statusError(status, error.success ? error.data : undefined, retryAfter);
};

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
  const code = wireCode(parsed?.error.code);
  return new UpstreamError("status", message, {
    status,
    retryAfterMs: retryAfter,
    refused:
      status === 401 || status === 403
        ? "key"
        : status === 400 && code === "content_filter"
          ? "prompt"
          : undefined,
    detail: { message: said, code, param: wireParam(parsed?.error.param) },
  });
}
