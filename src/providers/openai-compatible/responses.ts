// OpenAI's own Responses API (POST {base_url}/responses) for the calls that need it: a
// Responses API client's body with built-in tools the provider allows (web search, …), which
// no chat completion can carry. The body goes as the client sent it (./request.ts); the
// Response, or its events, come back beside the canonical answer (src/apis/types.ts), whose
// usage is the Response's.

import type { Chunk, Completion, FinishReason, NativeEvent, Usage } from "../../domain/completion.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import { sanitizeUpstreamMessage } from "../sanitize.ts";
import { isObject } from "./wire.ts";

const count = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : undefined;

/**
 * A Response's usage in our figures: input_tokens counts cached ones, output_tokens reasoning
 * ones, as our convention does. Undefined when it has none or not a valid one.
 */
export function responseUsage(raw: unknown): Usage | undefined {
  if (!isObject(raw)) return undefined;
  const prompt = count(raw.input_tokens);
  const completion = count(raw.output_tokens);
  if (prompt === undefined || completion === undefined) return undefined;
  const input = isObject(raw.input_tokens_details) ? raw.input_tokens_details : {};
  const output = isObject(raw.output_tokens_details) ? raw.output_tokens_details : {};
  return {
    prompt,
    completion,
    cachedInput: count(input.cached_tokens) ?? 0,
    cacheWrite: 0,
    reasoning: count(output.reasoning_tokens) ?? 0,
  };
}

/** The finish reason a Response's status says, given whether it ends in tool calls. */
function finishOf(response: Record<string, unknown>, toolCalls: boolean): FinishReason {
  if (response.status === "incomplete") {
    const reason = isObject(response.incomplete_details) ? response.incomplete_details.reason : undefined;
    return reason === "content_filter" ? "content_filter" : "length";
  }
  return toolCalls ? "tool_calls" : "stop";
}

const texts = (parts: unknown, type: string, field: string): string =>
  Array.isArray(parts)
    ? parts
        .filter(
          (p): p is Record<string, unknown> => isObject(p) && p.type === type && typeof p[field] === "string",
        )
        .map((p) => p[field] as string)
        .join("")
    : "";

/** A tool call item as a canonical tool call; undefined for items of no canonical place. */
function toolCall(item: Record<string, unknown>): Record<string, unknown> | undefined {
  if (item.type === "function_call")
    return {
      id: item.call_id,
      type: "function",
      function: { name: item.name, arguments: typeof item.arguments === "string" ? item.arguments : "" },
    };
  if (item.type === "custom_tool_call")
    return {
      id: item.call_id,
      type: "custom",
      custom: { name: item.name, input: typeof item.input === "string" ? item.input : "" },
    };
  return undefined;
}

/** The reasoning an item shows: its summary and its text, what review and estimates read. */
const reasoningText = (item: Record<string, unknown>): string =>
  texts(item.summary, "summary_text", "text") + texts(item.content, "reasoning_text", "text");

/** A whole Response as the canonical completion, the Response itself as its native form. */
export function responseCompletion(raw: unknown): Completion {
  if (!isObject(raw) || raw.object !== "response" || !Array.isArray(raw.output))
    throw new UpstreamError("malformed", "the upstream's reply is not a Response");
  let text = "";
  let refusal = "";
  let reasoning = "";
  const calls: Record<string, unknown>[] = [];
  for (const item of raw.output as unknown[]) {
    if (!isObject(item)) continue;
    if (item.type === "message") {
      text += texts(item.content, "output_text", "text");
      refusal += texts(item.content, "refusal", "refusal");
    } else if (item.type === "reasoning") reasoning += reasoningText(item);
    else {
      const call = toolCall(item);
      if (call) calls.push(call);
    }
    // built-in tools' items (web_search_call, …) have no canonical place: they reach the client natively
  }
  return {
    id: typeof raw.id === "string" ? raw.id : undefined,
    object: "chat.completion",
    model: typeof raw.model === "string" ? raw.model : undefined,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: text || (calls.length ? null : ""),
          refusal: refusal || null,
          ...(calls.length ? { tool_calls: calls } : {}),
          ...(reasoning ? { reasoning_content: reasoning } : {}),
        },
        finish_reason: finishOf(raw, calls.length > 0),
      },
    ],
    usage: responseUsage(raw.usage),
    native: raw,
  };
}

/** What an upstream's failed Response or `error` event says, as an UpstreamError. */
function streamFailure(data: Record<string, unknown>): UpstreamError {
  const error = isObject(data.response) && isObject(data.response.error) ? data.response.error : data;
  const said = typeof error.message === "string" ? sanitizeUpstreamMessage(error.message) : "";
  return new UpstreamError("status", `the upstream reported an error${said ? `: ${said}` : ""}`);
}

/**
 * The Responses event sequence as canonical chunks, each carrying the upstream events it
 * stands for. Nothing is handed on before the first output item, so a failure right after
 * response.created is still an ordinary failure (nothing reached the client).
 */
export class ResponsesStreamState {
  done = false;
  #started = false;
  #toolCalls = false;
  /** output index -> canonical tool-call index */
  readonly #calls = new Map<number, number>();
  #pending: NativeEvent[] = [];

  /** The chunks one upstream event makes (none while the answer has not begun). */
  read(event: string | undefined, data: Record<string, unknown>): Chunk[] {
    const type = typeof data.type === "string" ? data.type : (event ?? "");
    if (type === "error" || type === "response.failed") throw streamFailure(data);
    this.#pending.push({ event: type, data });
    const chunks = this.#chunks(type, data);
    if (!chunks.length && !this.#started) return [];
    if (!chunks.length) chunks.push({ object: "chat.completion.chunk", choices: [] });
    chunks.at(-1)!.native = this.#pending;
    this.#pending = [];
    return chunks;
  }

  #chunks(type: string, data: Record<string, unknown>): Chunk[] {
    const index = count(data.output_index) ?? 0;
    const delta = typeof data.delta === "string" ? data.delta : "";
    switch (type) {
      case "response.output_item.added": {
        const item = isObject(data.item) ? data.item : {};
        const call = toolCall(item);
        // any first item starts the answer (a web search comes before the text)
        if (!call) return this.#started ? [] : [this.#chunk({ content: "" })];
        this.#toolCalls = true;
        const at = this.#calls.size;
        this.#calls.set(index, at);
        const start =
          call.type === "custom"
            ? { ...call, custom: { ...(call.custom as object), input: "" } }
            : { ...call, function: { ...(call.function as object), arguments: "" } };
        return [this.#chunk({ content: null, tool_calls: [{ index: at, ...start }] })];
      }
      case "response.output_text.delta":
        return delta ? [this.#chunk({ content: delta })] : [];
      case "response.refusal.delta":
        return delta ? [this.#chunk({ refusal: delta })] : [];
      case "response.reasoning_text.delta":
      case "response.reasoning_summary_text.delta":
        return delta ? [this.#chunk({ reasoning_content: delta })] : [];
      case "response.function_call_arguments.delta":
      case "response.custom_tool_call_input.delta": {
        const at = this.#calls.get(index);
        if (at === undefined || !delta) return [];
        const piece =
          type === "response.function_call_arguments.delta"
            ? { index: at, function: { arguments: delta } }
            : { index: at, type: "custom", custom: { input: delta } };
        return [this.#chunk({ tool_calls: [piece] })];
      }
      case "response.completed":
      case "response.incomplete": {
        this.done = true;
        const response = isObject(data.response) ? data.response : {};
        const out = this.#started ? [] : [this.#chunk({ content: "" })];
        out.push(this.#chunk({}, finishOf(response, this.#toolCalls)));
        out.push({ object: "chat.completion.chunk", choices: [], usage: responseUsage(response.usage) });
        return out;
      }
      default:
        // the opening events, items' done events, built-in tools' progress: native only
        return [];
    }
  }

  #chunk(delta: Record<string, unknown>, finish: FinishReason | null = null): Chunk {
    if (!this.#started) {
      this.#started = true;
      delta = { role: "assistant", ...delta };
    }
    return { object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] };
  }
}
