// Adapter for Anthropic's Messages API: OpenAI chat completions translated to /v1/messages
// and the answers (whole or streamed) back into OpenAI's shapes, with Anthropic's usage in
// our convention. A call from a Messages API client (UpstreamCall.native) goes natively: its
// own body is sent, and the upstream's message or events come back beside the canonical
// translation (src/apis/types.ts).

import type { Chunk, Completion, FinishReason, NativeEvent, Usage } from "../../domain/completion.ts";
import { HttpUpstream, type Opened, parseShape, UpstreamHeaders } from "../http-upstream.ts";
import { type PassthroughSettings, passthroughSettings } from "../passthrough.ts";
import type { SseEvent } from "../sse-reader.ts";
import { type StreamReader, streamChunks } from "../stream-loop.ts";
import type { KeyState, NativeRequest, Provider, UpstreamCall } from "../types.ts";
import type { AnthropicConfig } from "./config.ts";
import { anthropicPromptBound, messagesBody, nativeMessagesBody } from "./request.ts";
import {
  type AnthropicUsage,
  anthropicError,
  eventSchema,
  finishReason,
  messageSchema,
  readUsage,
} from "./wire.ts";

/** The API version the translation is written against (sent as `anthropic-version`). */
export const ANTHROPIC_VERSION = "2023-06-01";

export class AnthropicProvider implements Provider {
  readonly id: string;
  readonly #http: HttpUpstream;
  readonly passthrough: PassthroughSettings;

  constructor(config: AnthropicConfig, env: Record<string, string | undefined>) {
    this.id = config.id;
    const headers = new UpstreamHeaders(config, env, (key) => ({ "x-api-key": key }), {
      "anthropic-version": ANTHROPIC_VERSION,
    });
    this.#http = new HttpUpstream(config, headers);
    this.passthrough = passthroughSettings(config);
  }

  promptBound = anthropicPromptBound;

  sendsNatively(native: NativeRequest): boolean {
    return native.api === "messages";
  }

  /** Anthropic has no custom tools: they go as tools of one string argument (./request.ts). */
  sendsCustomToolsAsFunctions(): boolean {
    return true;
  }

  async complete(call: UpstreamCall): Promise<Completion> {
    const native = nativeOf(call);
    const { body, extra } = this.#request(call, native, false);
    const raw = await this.#http.json(await this.#post(call, body, extra));
    const message = parseShape(messageSchema, raw, "the upstream's reply is not an Anthropic message");
    let text = "";
    let thinking = "";
    const toolCalls: unknown[] = [];
    for (const block of message.content) {
      if (block.type === "text") text += block.text ?? "";
      else if (block.type === "thinking" && typeof block.thinking === "string") thinking += block.thinking;
      else if (block.type === "tool_use")
        toolCalls.push({
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
        });
      // thinking, redacted_thinking and blocks of later API versions have no OpenAI place
    }
    return {
      id: message.id,
      object: "chat.completion",
      model: message.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: text || (toolCalls.length ? null : ""),
            refusal: null,
            ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
            // the canonical place of reasoning, which review and estimates read (native calls only)
            ...(native && thinking ? { reasoning_content: thinking } : {}),
          },
          logprobs: null,
          finish_reason: finishReason(message.stop_reason),
        },
      ],
      usage: message.usage ? readUsage(message.usage) : undefined,
      ...(native ? { native: raw as Record<string, unknown> } : {}),
    };
  }

  stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    // Refusals are thrown here, as the stream is asked for, so nothing is sent for them.
    const native = nativeOf(call);
    const { body, extra } = this.#request(call, native, true);
    return streamChunks(
      async () => this.#http.events(await this.#post(call, body, extra)),
      new StreamState(native !== undefined),
    );
  }

  /** The body of a call, and its headers beyond the fixed ones: the native body when the client spoke Messages. */
  #request(
    call: UpstreamCall,
    native: NativeRequest | undefined,
    stream: boolean,
  ): { body: string; extra: Record<string, string> | undefined } {
    if (!native)
      return { body: JSON.stringify(messagesBody(call, stream, this.passthrough.strict)), extra: undefined };
    const { body, betas } = nativeMessagesBody(call, native, stream, this.passthrough);
    return { body: JSON.stringify(body), extra: betas ? { "anthropic-beta": betas } : undefined };
  }

  #post(call: UpstreamCall, body: string, extra: Record<string, string> | undefined): Promise<Opened> {
    return this.#http.post(`${this.#http.basePath}/v1/messages`, body, call.signal, anthropicError, extra);
  }

  keyStates(): KeyState[] {
    return this.#http.keyStates();
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

type Event = ReturnType<typeof eventSchema.parse>;

/** The Messages API body of a call from a Messages API client, which this adapter sends as it is. */
function nativeOf(call: UpstreamCall): NativeRequest | undefined {
  return call.native?.api === "messages" ? call.native : undefined;
}

/**
 * Anthropic's event sequence as OpenAI chunks. Nothing is yielded before the first content
 * block, so an overloaded `error` right after `message_start` is still an ordinary failure
 * (nothing reached the client). Usage: input figures arrive in message_start, and each
 * message_delta's counts are running totals: the last one seen is the figure, never a sum.
 * For a native call, thinking is canonical too (`reasoning_content`), and any first block
 * starts the answer, so that the thinking reaches the client as it comes.
 */
class StreamState implements StreamReader {
  /** a native call's: its events are handed on too, with the chunks they make */
  readonly #native: boolean;
  done = false;
  #id: string | undefined;
  #model: string | undefined;
  #usage: AnthropicUsage = {};
  #finish: FinishReason = "stop";
  #started = false;
  /** content block index -> OpenAI tool-call index, for tool_use blocks */
  readonly #tools = new Map<number, number>();
  /** native: the upstream's events not yet handed on with a chunk */
  #pending: NativeEvent[] = [];

  constructor(native: boolean) {
    this.#native = native;
  }

  read(raw: unknown, event: SseEvent): Iterable<Chunk> {
    const parsed = parseShape(eventSchema, raw, "the upstream sent a stream event Anthropic does not define");
    if (parsed.type === "error") throw anthropicError(undefined, raw);
    if (!this.#native) return this.#translate(parsed);
    this.#pending.push({ event: event.event ?? parsed.type, data: raw as Record<string, unknown> });
    const chunks = [...this.#translate(parsed)];
    // Nothing is handed on before the first content block (as for translated streams), so
    // an error right after message_start is still an ordinary failure.
    if (!chunks.length && !this.#started) return chunks;
    if (!chunks.length) chunks.push({ object: "chat.completion.chunk", choices: [] });
    chunks.at(-1)!.native = this.#pending;
    this.#pending = [];
    return chunks;
  }

  *#translate(event: Event): Generator<Chunk> {
    switch (event.type) {
      case "message_start":
        this.#id = event.message?.id;
        this.#model = event.message?.model;
        this.#take(event.message?.usage);
        return;
      case "content_block_start": {
        const block = event.content_block;
        if (block?.type === "text") {
          if (block.text || !this.#started) yield this.#chunk({ content: block.text ?? "" });
        } else if (block?.type === "tool_use" && event.index !== undefined) {
          const index = this.#tools.size;
          this.#tools.set(event.index, index);
          yield this.#chunk({
            content: null,
            tool_calls: [
              { index, id: block.id, type: "function", function: { name: block.name ?? "", arguments: "" } },
            ],
          });
        } else if (this.#native && !this.#started) yield this.#chunk({ content: "" });
        return;
      }
      case "content_block_delta": {
        const delta = event.delta;
        if (delta?.type === "text_delta" && delta.text) yield this.#chunk({ content: delta.text });
        else if (delta?.type === "input_json_delta" && delta.partial_json && event.index !== undefined) {
          const index = this.#tools.get(event.index);
          if (index !== undefined)
            yield this.#chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] });
        } else if (this.#native && delta?.type === "thinking_delta" && delta.thinking)
          yield this.#chunk({ reasoning_content: delta.thinking });
        // otherwise thinking_delta and signature_delta have no OpenAI place
        return;
      }
      case "message_delta":
        if (event.delta?.stop_reason) this.#finish = finishReason(event.delta.stop_reason);
        this.#take(event.usage);
        return;
      case "message_stop":
        this.done = true;
        if (!this.#started) yield this.#chunk({ content: "" });
        yield this.#chunk({}, this.#finish);
        yield { ...this.#base(), choices: [], usage: this.#canonicalUsage() };
        return;
      // ping, content_block_stop and event types added later carry nothing to translate
    }
  }

  /** Running totals: each figure given replaces the one before. */
  #take(usage: AnthropicUsage | undefined): void {
    if (!usage) return;
    for (const [key, value] of Object.entries(usage))
      if (typeof value === "number") (this.#usage as Record<string, number>)[key] = value;
  }

  #canonicalUsage(): Usage | undefined {
    return this.#usage.input_tokens === undefined && this.#usage.output_tokens === undefined
      ? undefined
      : readUsage(this.#usage);
  }

  #base() {
    return { id: this.#id, object: "chat.completion.chunk" as const, model: this.#model };
  }

  #chunk(delta: Record<string, unknown>, finish: FinishReason | null = null): Chunk {
    const chunk: Chunk = {
      ...this.#base(),
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    };
    if (!this.#started) {
      this.#started = true;
      chunk.choices[0]!.delta = { role: "assistant", ...delta };
      // message_start's figures (the prompt's input and cache counts), so that a stream the
      // relay stops or loses before message_stop is charged the prompt Anthropic counted,
      // not a local estimate (Chunk.usageSoFar; the relay takes it off before any client).
      const usage = this.#canonicalUsage();
      if (usage) chunk.usageSoFar = usage;
    }
    return chunk;
  }
}
