// Adapter for the Gemini API: OpenAI chat completions translated to generateContent and
// streamGenerateContent (SSE), and the candidates back into OpenAI choices, with Gemini's
// usage (thinking included) in our convention. A call from a Gemini API client
// (UpstreamCall.native) goes natively: its own body is sent, and the upstream's response or
// events come back beside the canonical translation (src/apis/types.ts); so does its
// countTokens.

import type { Chunk, Completion, FinishReason, NativeEvent } from "../../domain/completion.ts";
import { unsupportedPart } from "../field-policy.ts";
import { HttpUpstream, type Opened, parseShape, UpstreamHeaders } from "../http-upstream.ts";
import { embeddingExtras, type PassthroughSettings, passthroughSettings } from "../passthrough.ts";
import { type StreamReader, streamChunks } from "../stream-loop.ts";
import type {
  EmbeddingCall,
  EmbeddingResult,
  KeyState,
  NativeRequest,
  Provider,
  UpstreamCall,
} from "../types.ts";
import type { GeminiConfig } from "./config.ts";
import { embedContentRequest, MAX_BATCH, readBatch, readEmbedContent } from "./embeddings.ts";
import { geminiPromptBound, generateBody, nativeCountBody, nativeGenerateBody, PROVIDER } from "./request.ts";
import { answerPrefix, toolCallId } from "./tool-ids.ts";
import {
  finishReason,
  type GeminiPart,
  type GeminiResponse,
  geminiError,
  isError,
  readUsage,
  responseSchema,
} from "./wire.ts";

export class GeminiProvider implements Provider {
  readonly id: string;
  readonly #http: HttpUpstream;
  readonly passthrough: PassthroughSettings;

  constructor(config: GeminiConfig, env: Record<string, string | undefined>) {
    this.id = config.id;
    this.#http = new HttpUpstream(
      config,
      new UpstreamHeaders(config, env, (key) => ({ "x-goog-api-key": key })),
    );
    this.passthrough = passthroughSettings(config);
  }

  promptBound = geminiPromptBound;

  sendsNatively(native: NativeRequest): boolean {
    return native.api === "gemini";
  }

  /** Gemini has no custom tools: they go as functions of one string argument (./request.ts). */
  sendsCustomToolsAsFunctions(): boolean {
    return true;
  }

  async complete(call: UpstreamCall): Promise<Completion> {
    const native = nativeOf(call);
    const body = this.#body(call, native);
    const raw = await this.#http.json(await this.#post(call, "generateContent", body));
    const response = parseShape(responseSchema, raw, "the upstream's reply is not a Gemini response");
    const prefix = answerPrefix();
    let calls = 0;
    const candidates = response.candidates ?? [];
    const choices: Completion["choices"] = candidates.map((candidate, i) => {
      const { text, thoughts, toolCalls } = readParts(candidate.content?.parts ?? [], (signature) =>
        toolCallId(prefix, calls++, signature),
      );
      return {
        index: candidate.index ?? i,
        message: {
          role: "assistant",
          content: text || (toolCalls.length ? null : ""),
          refusal: null,
          ...(toolCalls.length ? { tool_calls: toolCalls.map(({ index: _index, ...call }) => call) } : {}),
          // the canonical place of reasoning, which review and estimates read (native calls only:
          // the translation asks for no thought summaries)
          ...(native && thoughts ? { reasoning_content: thoughts } : {}),
        },
        logprobs: null,
        finish_reason: finishReason(candidate.finishReason, toolCalls.length > 0),
      };
    });
    // A prompt Gemini blocked has no candidates, only the reason.
    if (!choices.length)
      choices.push({
        index: 0,
        message: { role: "assistant", content: null, refusal: null },
        logprobs: null,
        finish_reason: response.promptFeedback?.blockReason ? "content_filter" : "stop",
      });
    return {
      id: response.responseId,
      object: "chat.completion",
      model: response.modelVersion,
      choices,
      usage: response.usageMetadata ? readUsage(response.usageMetadata) : undefined,
      ...(native ? { native: raw as Record<string, unknown> } : {}),
    };
  }

  stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    // Refusals are thrown here, as the stream is asked for, so nothing is sent for them.
    const native = nativeOf(call);
    const body = this.#body(call, native);
    return streamChunks(
      async () => this.#http.events(await this.#post(call, "streamGenerateContent?alt=sse", body)),
      new StreamState(native !== undefined),
    );
  }

  /**
   * One input is one embedContent; several go as batchEmbedContents of at most MAX_BATCH
   * each, a few batches at a time. `user` changes nothing there; the fields the gateway does
   * not read have no counterpart (dropped with a notice, or refused when strict). Gemini
   * reports no usage.
   */
  async embed(call: EmbeddingCall): Promise<EmbeddingResult> {
    const { request } = call;
    // Token ids are another tokenizer's numbers: Gemini takes text, and a text cannot be made of them.
    if (request.tokenIds)
      throw unsupportedPart("input", PROVIDER, "Input given as token ids (it embeds text)");
    embeddingExtras(call, this.id, this.passthrough, false);
    const texts = request.inputs as readonly string[];
    const dims = request.dimensions;
    if (texts.length === 1) {
      const body = JSON.stringify(embedContentRequest(texts[0]!, dims));
      const raw = await this.#http.json(await this.#post(call, "embedContent", body));
      return { vectors: [readEmbedContent(raw)], promptTokens: undefined };
    }
    const batches: string[][] = [];
    for (let i = 0; i < texts.length; i += MAX_BATCH) batches.push(texts.slice(i, i + MAX_BATCH));
    const vectors = await inTurn(batches, BATCHES_IN_FLIGHT, call.signal, async (batch, signal) => {
      const requests = batch.map((text) => embedContentRequest(text, dims, call.upstreamModel));
      const body = JSON.stringify({ requests });
      const raw = await this.#http.json(await this.#post({ ...call, signal }, "batchEmbedContents", body));
      return readBatch(raw, batch.length);
    });
    return { vectors: vectors.flat(), promptTokens: undefined };
  }

  /** The upstream's own count of a Gemini API client's countTokens body. */
  async countTokens(native: NativeRequest, upstreamModel: string, signal: AbortSignal): Promise<unknown> {
    const path = `${this.#http.basePath}/v1beta/models/${encodeURIComponent(upstreamModel)}:countTokens`;
    const body = JSON.stringify(nativeCountBody(native, upstreamModel));
    return this.#http.json(await this.#http.post(path, body, signal, geminiError));
  }

  #body(call: UpstreamCall, native: NativeRequest | undefined): string {
    return JSON.stringify(
      native ? nativeGenerateBody(call, native) : generateBody(call, this.passthrough.strict),
    );
  }

  #post(call: { upstreamModel: string; signal: AbortSignal }, method: string, body: string): Promise<Opened> {
    const path = `${this.#http.basePath}/v1beta/models/${encodeURIComponent(call.upstreamModel)}:${method}`;
    return this.#http.post(path, body, call.signal, geminiError);
  }

  keyStates(): KeyState[] {
    return this.#http.keyStates();
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

/** Batches of one call sent at once: 2048 inputs are 21 batches, which one by one would add up. */
const BATCHES_IN_FLIGHT = 4;

/**
 * `run` over each of `items`, at most `limit` at a time, the results in the items' order. The
 * first failure aborts the others (their signal) and is thrown.
 */
async function inTurn<T, R>(
  items: readonly T[],
  limit: number,
  signal: AbortSignal,
  run: (item: T, signal: AbortSignal) => Promise<R>,
): Promise<R[]> {
  const stop = new AbortController();
  const both = AbortSignal.any([signal, stop.signal]);
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await run(items[i]!, both);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  } catch (err) {
    stop.abort(err);
    throw err;
  }
  return results;
}

/** The Gemini API body of a call from a Gemini API client, which this adapter sends as it is. */
function nativeOf(call: UpstreamCall): NativeRequest | undefined {
  return call.native?.api === "gemini" ? call.native : undefined;
}

interface ToolCallDelta {
  index: number;
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** A candidate's parts: its text, its thought summaries apart, and its function calls as tool calls. */
function readParts(parts: GeminiPart[], nextId: (signature: string | undefined) => string, firstIndex = 0) {
  let text = "";
  let thoughts = "";
  const toolCalls: ToolCallDelta[] = [];
  for (const part of parts) {
    if (part.functionCall) {
      toolCalls.push({
        index: firstIndex + toolCalls.length,
        // the signature travels in the id, to come back with the call (./tool-ids.ts)
        id: nextId(part.thoughtSignature),
        type: "function",
        function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) },
      });
    } else if (part.text && part.thought) thoughts += part.text;
    else if (part.text) text += part.text;
  }
  return { text, thoughts, toolCalls };
}

/**
 * Gemini's stream events (each a whole GenerateContentResponse holding what is new) as OpenAI
 * chunks. Usage in each event is the running total: the last one is the figure. For a native
 * call the events are handed on too, each with the chunks it made (an event that made none
 * rides on a chunk without choices), and thought summaries are canonical reasoning.
 */
class StreamState implements StreamReader {
  /** a native call's: its events are handed on too, with the chunks they make */
  readonly #native: boolean;
  readonly #prefix = answerPrefix();
  #calls = 0;
  #id: string | undefined;
  #model: string | undefined;
  #usage: GeminiResponse["usageMetadata"];
  #blocked = false;
  readonly #started = new Set<number>();
  readonly #finished = new Set<number>();
  /** candidate -> how many tool calls it made so far, and whether any */
  readonly #toolCalls = new Map<number, number>();
  /** native: the upstream's events not yet handed on with a chunk */
  #pending: NativeEvent[] = [];

  constructor(native: boolean) {
    this.#native = native;
  }

  read(raw: unknown): Iterable<Chunk> {
    if (isError(raw)) throw geminiError(undefined, raw);
    const response = parseShape(
      responseSchema,
      raw,
      "the upstream sent a stream event that is not a Gemini response",
    );
    if (!this.#native) return this.#translate(response);
    this.#pending.push({ event: "", data: raw as Record<string, unknown> });
    const chunks = [...this.#translate(response)];
    // Nothing is handed on before the answer starts, so an error event right after is still
    // an ordinary failure.
    if (!chunks.length && !this.#started.size && !this.#blocked) return chunks;
    if (!chunks.length) chunks.push({ object: "chat.completion.chunk", choices: [] });
    chunks.at(-1)!.native = this.#pending;
    this.#pending = [];
    return chunks;
  }

  /** Gemini's stream has no end marker: it is whole when every candidate has finished. */
  end(): Chunk[] | undefined {
    const complete = this.#blocked || (this.#finished.size > 0 && this.#finished.size === this.#started.size);
    return complete ? [this.#usageChunk()] : undefined;
  }

  *#translate(response: GeminiResponse): Generator<Chunk> {
    this.#id ??= response.responseId;
    this.#model ??= response.modelVersion;
    if (response.usageMetadata) this.#usage = response.usageMetadata;
    const candidates = response.candidates ?? [];
    if (!candidates.length && response.promptFeedback?.blockReason && !this.#started.size) {
      this.#blocked = true;
      yield this.#chunk(0, { role: "assistant", content: "" }, "content_filter");
      return;
    }
    for (const [i, candidate] of candidates.entries()) {
      const index = candidate.index ?? i;
      const made = this.#toolCalls.get(index) ?? 0;
      const { text, thoughts, toolCalls } = readParts(
        candidate.content?.parts ?? [],
        (signature) => toolCallId(this.#prefix, this.#calls++, signature),
        made,
      );
      if (toolCalls.length) this.#toolCalls.set(index, made + toolCalls.length);
      const delta: Record<string, unknown> = {};
      if (!this.#started.has(index)) {
        this.#started.add(index);
        delta.role = "assistant";
        delta.content = text;
      } else if (text) delta.content = text;
      if (this.#native && thoughts) delta.reasoning_content = thoughts;
      if (toolCalls.length) delta.tool_calls = toolCalls;
      const finish = candidate.finishReason
        ? finishReason(candidate.finishReason, this.#toolCalls.has(index))
        : null;
      if (finish) this.#finished.add(index);
      if (Object.keys(delta).length || finish) yield this.#chunk(index, delta, finish);
    }
  }

  #usageChunk(): Chunk {
    return {
      id: this.#id,
      object: "chat.completion.chunk",
      model: this.#model,
      choices: [],
      usage: this.#usage ? readUsage(this.#usage) : undefined,
    };
  }

  #chunk(index: number, delta: Record<string, unknown>, finish: FinishReason | null): Chunk {
    return {
      id: this.#id,
      object: "chat.completion.chunk",
      model: this.#model,
      choices: [{ index, delta, logprobs: null, finish_reason: finish }],
    };
  }
}
