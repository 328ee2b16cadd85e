// Usage as the draft records it and the client reads it: the upstream's figures when it
// reported them, else a local estimate of what the model read and wrote.
import type { ChatRequest } from "../apis/chat-completions/request.ts";
import { localPromptTokens } from "../providers/prompt-bound.ts";
import type { Usage } from "../providers/types.ts";
import type { CallDraft } from "../records/draft.ts";
import { countText } from "../tokens/count.ts";

/** Every text a choice carries, for counting: content, refusal, tool-call names, arguments and custom inputs. */
export function choiceText(part: Record<string, unknown> | undefined): string {
  if (!part) return "";
  let text = "";
  if (typeof part.content === "string") text += part.content;
  if (typeof part.refusal === "string") text += part.refusal;
  if (Array.isArray(part.tool_calls))
    for (const call of part.tool_calls) {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } }).function;
      if (typeof fn?.name === "string") text += fn.name;
      if (typeof fn?.arguments === "string") text += fn.arguments;
      const custom = (call as { custom?: { name?: unknown; input?: unknown } }).custom;
      if (typeof custom?.name === "string") text += custom.name;
      if (typeof custom?.input === "string") text += custom.input;
    }
  return text;
}

/** The upstream's usage when it gave one, else the local estimate of `written` after this prompt. */
export function noteUsage(
  draft: CallDraft,
  usage: Usage | undefined,
  req: ChatRequest,
  written: string,
): void {
  if (usage) draft.setUsage(usage.prompt, usage.completion, "upstream", usage);
  else draft.setUsage(localPromptTokens(req), countText(written), "estimated");
}

/** OpenAI's usage object for the client: the upstream's detail fields and the draft's totals. */
export function clientUsage(draft: CallDraft, usage: Usage | undefined) {
  return {
    ...usage?.details,
    prompt_tokens: draft.promptTokens,
    completion_tokens: draft.completionTokens,
    total_tokens: draft.totalTokens,
  };
}

/** OpenAI's usage object as the upstream reported it, for a usage chunk passed on. */
export function openaiUsage(usage: Usage) {
  return {
    ...usage.details,
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
  };
}
