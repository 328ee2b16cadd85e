// A whole Messages answer (`type: "message"`): from an Anthropic upstream, its own message
// restamped with our id and the public model; from any other, built from the canonical
// completion. Usage in Anthropic's fields: `input_tokens` without the cache figures.
import type { Completion, FinishReason } from "../../domain/completion.ts";
import { safetyExtension, withheldNotice } from "../../safety/withheld.ts";
import type { AnswerUsage, JsonAnswer } from "../types.ts";

/** Our message id: msg_ and the request id without its prefix. */
export function messageId(requestId: string): string {
  return `msg_${requestId.slice(requestId.indexOf("_") + 1)}`;
}

const STOP_REASONS: Readonly<Record<FinishReason, string>> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  function_call: "tool_use",
  content_filter: "refusal",
};

/** Anthropic's stop_reason for a canonical finish reason (a stop sequence reads as end_turn). */
export function stopReason(finish: FinishReason | null | undefined): string {
  return (finish && STOP_REASONS[finish]) || "end_turn";
}

/** Anthropic's four usage figures, from the figures as charged. */
export function anthropicUsage(usage: AnswerUsage) {
  return {
    input_tokens: Math.max(0, usage.prompt - usage.cachedInput - usage.cacheWrite),
    cache_creation_input_tokens: usage.cacheWrite,
    cache_read_input_tokens: usage.cachedInput,
    output_tokens: usage.completion,
  };
}

/** The reasoning an OpenAI-shaped message or delta carries (vLLM, DeepSeek, SGLang; OpenRouter, Ollama). */
export function reasoningOf(part: Record<string, unknown> | undefined): string | undefined {
  const r = part?.reasoning_content ?? part?.reasoning;
  return typeof r === "string" && r ? r : undefined;
}

/** A tool call's arguments as Anthropic's `input` object; arguments that are no JSON object read as none. */
export function toolInput(args: unknown): Record<string, unknown> {
  if (typeof args !== "string") return {};
  try {
    const parsed: unknown = JSON.parse(args || "{}");
    return parsed && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** The content blocks of a canonical choice: thinking (without a signature), text, tool uses. */
function contentOf(completion: Completion): unknown[] {
  const message = completion.choices[0]?.message;
  if (!message) return [];
  const blocks: unknown[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning) blocks.push({ type: "thinking", thinking: reasoning, signature: "" });
  if (typeof message.content === "string" && message.content)
    blocks.push({ type: "text", text: message.content });
  if (Array.isArray(message.tool_calls))
    for (const call of message.tool_calls as {
      id?: string;
      function?: { name?: string; arguments?: unknown };
    }[])
      blocks.push({
        type: "tool_use",
        id: call.id ?? "",
        name: call.function?.name ?? "",
        input: toolInput(call.function?.arguments),
      });
  return blocks;
}

/** The `message` body of a whole answer. */
export function messageBody(answer: JsonAnswer): string {
  const { completion, withheld } = answer;
  const native = completion.native;
  const body: Record<string, unknown> = native
    ? { ...native, id: messageId(answer.requestId), model: answer.model }
    : {
        id: messageId(answer.requestId),
        type: "message",
        role: "assistant",
        model: answer.model,
        content: contentOf(completion),
        stop_reason: stopReason(completion.choices[0]?.finish_reason),
        stop_sequence: null,
        usage: anthropicUsage(answer.usage),
      };
  if (withheld) {
    // An ordinary end of turn with the gateway's notice, not `refusal`: Claude Code words a
    // refusal as Anthropic's ("appears to violate our Usage Policy"), blaming the vendor.
    body.content = [{ type: "text", text: withheldNotice(answer.requestId) }];
    body.stop_reason = "end_turn";
    body.stop_sequence = null;
    body.usage = { ...(body.usage as object), ...anthropicUsage(answer.usage) };
    body.safety = safetyExtension(withheld);
  }
  return JSON.stringify(body);
}
