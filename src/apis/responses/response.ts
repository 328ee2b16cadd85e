// The Response object of OpenAI's Responses API, built from the canonical answer: the output
// items (reasoning, the assistant's message, its function and custom tool calls), the status,
// and usage in the Responses fields. The streamed form (./events.ts) ends with the same object.

import type { ChoiceMessage, FinishReason } from "../../domain/completion.ts";
import type { AnswerUsage } from "../types.ts";
import { NO_NAMESPACES, type ToolNamespaces } from "./namespaces.ts";
import type { InputItem, ResponsesRequest } from "./request.ts";

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** The usage as charged, in the Responses fields. */
export function responsesUsage(
  u: Pick<AnswerUsage, "prompt" | "completion" | "cachedInput" | "reasoning">,
): ResponsesUsage {
  return {
    input_tokens: u.prompt,
    input_tokens_details: { cached_tokens: u.cachedInput },
    output_tokens: u.completion,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.prompt + u.completion,
  };
}

/** An output item: what the Response lists and what a later request may send back as input. */
export type OutputItem = Extract<
  InputItem,
  { type: "message" | "function_call" | "custom_tool_call" | "reasoning" }
> & {
  id: string;
};

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

/** The id of a response and of its items, from the call's request id (req_<x> -> resp_<x>). */
export class ResponseIds {
  readonly id: string;
  readonly #suffix: string;
  #items = 0;

  constructor(requestId: string) {
    this.#suffix = requestId.slice(requestId.indexOf("_") + 1);
    this.id = `resp_${this.#suffix}`;
  }

  /** the next output item's id: msg_, fc_, ctc_ or rs_ and a number unique in the response */
  item(prefix: "msg" | "fc" | "ctc" | "rs"): string {
    return `${prefix}_${this.#suffix}${(this.#items++).toString(36).padStart(2, "0")}`;
  }
}

/** The reasoning text an upstream sent beside the answer (vLLM, DeepSeek, …: `reasoning_content`). */
export function reasoningOf(part: Record<string, unknown> | undefined): string | undefined {
  const text = part?.reasoning_content ?? part?.reasoning;
  return typeof text === "string" ? text : undefined;
}

export function reasoningItem(id: string, text: string): OutputItem {
  return { type: "reasoning", id, summary: [], content: [{ type: "reasoning_text", text }] };
}

export function messageItem(id: string, text: string, refusal: string | undefined, status: ResponseStatus) {
  const content: Array<Record<string, unknown>> = [];
  if (text || refusal === undefined)
    content.push({ type: "output_text", text, annotations: [], logprobs: [] });
  if (refusal !== undefined) content.push({ type: "refusal", refusal });
  return { type: "message", id, status, role: "assistant", content } as unknown as OutputItem;
}

export function toolCallItem(
  ids: ResponseIds,
  call: Record<string, unknown>,
  namespaces: ToolNamespaces = NO_NAMESPACES,
): OutputItem | undefined {
  const callId = typeof call.id === "string" ? call.id : "";
  const custom = call.custom as { name?: unknown; input?: unknown } | undefined;
  if (call.type === "custom" && typeof custom?.name === "string")
    return {
      type: "custom_tool_call",
      id: ids.item("ctc"),
      call_id: callId,
      ...namespaces.restore(custom.name),
      input: typeof custom.input === "string" ? custom.input : "",
    };
  const fn = call.function as { name?: unknown; arguments?: unknown } | undefined;
  if (typeof fn?.name !== "string") return undefined;
  return {
    type: "function_call",
    id: ids.item("fc"),
    call_id: callId,
    ...namespaces.restore(fn.name),
    arguments: typeof fn.arguments === "string" ? fn.arguments : "",
    status: "completed",
  };
}

/** A choice's message as output items: reasoning, then the message, then the tool calls. */
export function outputItems(
  ids: ResponseIds,
  message: ChoiceMessage,
  status: ResponseStatus,
  namespaces: ToolNamespaces = NO_NAMESPACES,
): OutputItem[] {
  const items: OutputItem[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning) items.push(reasoningItem(ids.item("rs"), reasoning));
  const text = typeof message.content === "string" ? message.content : "";
  const refusal = typeof message.refusal === "string" && message.refusal ? message.refusal : undefined;
  const calls = Array.isArray(message.tool_calls)
    ? (message.tool_calls as Array<Record<string, unknown>>)
    : [];
  if (text || refusal !== undefined || !calls.length)
    items.push(messageItem(ids.item("msg"), text, refusal, status));
  for (const call of calls) {
    const item = toolCallItem(ids, call, namespaces);
    if (item) items.push(item);
  }
  return items;
}

/** The status a finish reason gives a response, and why it is incomplete. */
export function statusOf(finish: FinishReason | null | undefined): {
  status: ResponseStatus;
  incomplete_details: { reason: string } | null;
} {
  if (finish === "length")
    return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finish === "content_filter")
    return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

/** The request's settings a Response repeats, as OpenAI's do. */
function echoedSettings(req: ResponsesRequest) {
  return {
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: req.max_tool_calls ?? null,
    metadata: req.metadata ?? {},
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: req.reasoning?.summary ?? null },
    service_tier: req.service_tier ?? "default",
    store: req.store ?? true,
    temperature: req.temperature ?? null,
    text: { format: req.text?.format ?? { type: "text" }, verbosity: req.text?.verbosity ?? "medium" },
    tool_choice: req.tool_choice ?? "auto",
    tools: req.tools ?? [],
    top_logprobs: req.top_logprobs ?? 0,
    top_p: req.top_p ?? null,
    truncation: req.truncation ?? "disabled",
    user: req.user ?? null,
  };
}

export interface ResponseState {
  ids: ResponseIds;
  createdAt: number;
  status: ResponseStatus;
  output: OutputItem[];
  incomplete_details?: { reason: string } | null;
  error?: { code: string; message: string } | null;
  usage?: ResponsesUsage | null;
}

/** The Response object, in the order of fields OpenAI sends. */
export function responseObject(req: ResponsesRequest, state: ResponseState) {
  return {
    id: state.ids.id,
    object: "response",
    created_at: state.createdAt,
    status: state.status,
    background: false,
    ...(state.status === "completed" ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
    error: state.error ?? null,
    incomplete_details: state.incomplete_details ?? null,
    model: req.model,
    output: state.output,
    ...echoedSettings(req),
    usage: state.usage ?? null,
  };
}

export type ResponseObject = ReturnType<typeof responseObject>;
