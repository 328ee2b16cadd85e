// Adapter for Anthropic's Messages API: OpenAI chat completions translated to /v1/messages
// and the answers (whole or streamed) back into OpenAI's shapes, with Anthropic's usage in
// our convention.
import { customToolNames, restoreCustomCallChunks, restoreCustomCalls } from "../custom-tools.ts";
import { HttpUpstream, type Opened, parseJson, parseShape, upstreamHeaders } from "../http-upstream.ts";
import type { Chunk, Completion, FinishReason, Provider, UpstreamCall, Usage } from "../types.ts";
import { UpstreamError } from "../upstream-error.ts";
import type { AnthropicConfig } from "./config.ts";
import { anthropicPromptBound, messagesBody } from "./request.ts";
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
  readonly #headers: Record<string, string>;
  readonly #dropUnsupported: boolean;

  constructor(config: AnthropicConfig, env: Record<string, string | undefined>) {
    this.id = config.id;
    this.#http = new HttpUpstream(config);
    this.#dropUnsupported = config.drop_unsupported;
    this.#headers = upstreamHeaders(config, env, (key) => ({ "x-api-key": key }), {
      "anthropic-version": ANTHROPIC_VERSION,
    });
  }

  promptBound = anthropicPromptBound;

  async complete(call: UpstreamCall): Promise<Completion> {
    const raw = await this.#http.json(await this.#post(call, this.#body(call, false)));
    const message = parseShape(messageSchema, raw, "the upstream's reply is not an Anthropic message");
    let text = "";
    const toolCalls: unknown[] = [];
    for (const block of message.content) {
      if (block.type === "text") text += block.text ?? "";
      else if (block.type === "tool_use")
        toolCalls.push({
          id: block.id,
          type: "function",
          function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) },
        });
      // thinking, redacted_thinking and blocks of later API versions have no OpenAI place
    }
    const completion: Completion = {
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
          },
          logprobs: null,
          finish_reason: finishReason(message.stop_reason),
        },
      ],
      usage: message.usage ? readUsage(message.usage) : undefined,
    };
    return restoreCustomCalls(completion, customToolNames(call.request));
  }

  stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    // Refusals are thrown here, as the stream is asked for, so nothing is sent for them.
    return restoreCustomCallChunks(this.#chunks(call, this.#body(call, true)), customToolNames(call.request));
  }

  async *#chunks(call: UpstreamCall, body: string): AsyncGenerator<Chunk> {
    const state = new StreamState();
    for await (const event of this.#http.events(await this.#post(call, body))) {
      if (state.done) continue; // read on to the body's end: the connection is kept
      const raw = parseJson(event.data, "the upstream sent a stream event that is not JSON");
      const parsed = parseShape(
        eventSchema,
        raw,
        "the upstream sent a stream event Anthropic does not define",
      );
      if (parsed.type === "error") throw anthropicError(undefined, raw);
      yield* state.read(parsed);
    }
    if (!state.done) throw new UpstreamError("network", "the upstream stream ended before it was complete");
  }

  #body(call: UpstreamCall, stream: boolean): string {
    return JSON.stringify(messagesBody(call, stream, this.#dropUnsupported));
  }

  #post(call: UpstreamCall, body: string): Promise<Opened> {
    return this.#http.post(
      `${this.#http.basePath}/v1/messages`,
      this.#headers,
      body,
      call.signal,
      anthropicError,
    );
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

type Event = ReturnType<typeof eventSchema.parse>;

/**
 * Anthropic's event sequence as OpenAI chunks. Nothing is yielded before the first content
 * block, so an overloaded `error` right after `message_start` is still an ordinary failure
 * (nothing reached the client). Usage: input figures arrive in message_start, and each
 * message_delta's counts are running totals: the last one seen is the figure, never a sum.
 */
class StreamState {
  done = false;
  #id: string | undefined;
  #model: string | undefined;
  #usage: AnthropicUsage = {};
  #finish: FinishReason = "stop";
  #started = false;
  /** content block index -> OpenAI tool-call index, for tool_use blocks */
  readonly #tools = new Map<number, number>();

  *read(event: Event): Generator<Chunk> {
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
        }
        return;
      }
      case "content_block_delta": {
        const delta = event.delta;
        if (delta?.type === "text_delta" && delta.text) yield this.#chunk({ content: delta.text });
        else if (delta?.type === "input_json_delta" && delta.partial_json && event.index !== undefined) {
          const index = this.#tools.get(event.index);
          if (index !== undefined)
            yield this.#chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] });
        }
        // thinking_delta and signature_delta have no OpenAI place
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
    if (!this.#started) {
      this.#started = true;
      delta = { role: "assistant", ...delta };
    }
    return { ...this.#base(), choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
  }
}
