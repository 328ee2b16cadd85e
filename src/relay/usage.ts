// Usage as the draft records it and the client reads it: the upstream's figures when it
// reported them, else a local estimate of what the model read and wrote.

import type { AnswerUsage } from "../apis/types.ts";
import type { ChatRequest } from "../domain/chat-request.ts";
import type { Usage } from "../domain/completion.ts";
import { promptParts } from "../providers/prompt-bound.ts";
import type { CallDraft } from "../records/draft.ts";
import { estimator } from "../tokens/estimator.ts";

/**
 * Every text a choice carries, for counting and review: content, refusal, reasoning (the
 * `reasoning_content` OpenAI-compatible servers and native Anthropic answers carry), tool-call
 * names, arguments and custom inputs.
 */
export function choiceText(part: Record<string, unknown> | undefined): string {
  if (!part) return "";
  let text = "";
  if (typeof part.reasoning_content === "string") text += part.reasoning_content;
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

/**
 * The output to count: its text, or a sample of a long stream's (src/lib/streamed-text.ts)
 * whose count `scale` times is the whole's.
 */
export type Written = string | { text: string; scale: number };

/** The upstream's usage when it gave one, else the local estimate of `written` after this prompt. */
export async function noteUsage(
  draft: CallDraft,
  usage: Usage | undefined,
  req: ChatRequest,
  written: Written,
): Promise<void> {
  if (usage) draft.setUsage(usage.prompt, usage.completion, "upstream", usage);
  else await estimateUsage(draft, req, written);
}

/** What a stream's meter knows (src/relay/stream/meter.ts). */
export interface MeteredStream {
  /** the output produced (a sample of it when long) */
  output: { readonly length: number; sample(): { text: string; scale: number } };
  usage: Usage | undefined;
  usageSoFar: Usage | undefined;
  ended: boolean;
}

/**
 * The usage a stream is charged. Whole (the upstream reached its end): its usage, else the
 * local estimate. Stopped (content safety withheld the rest) or lost (a failure, the client
 * gone) before its final figures: what the upstream reported so far whenever it reported
 * anything, since the prompt it counted is exact where a local count of another tokenizer is
 * not (Anthropic's message_start: "29,015 input tokens" where the estimate said 26,012), with
 * the larger of its output count so far and the local count of the text produced, as output
 * (at most what the reservation leaves beside that prompt: an estimate is never charged past
 * the hold); the local estimate only when it reported nothing.
 */
export async function noteStreamUsage(
  draft: CallDraft,
  stream: MeteredStream,
  req: ChatRequest,
  reserved: number,
): Promise<void> {
  const reported = stream.usage ?? stream.usageSoFar;
  if (stream.ended && stream.usage) return noteUsage(draft, stream.usage, req, "");
  if (stream.ended || !reported) return noteUsage(draft, undefined, req, stream.output.sample());
  let completion = reported.completion;
  if (stream.output.length) {
    const { text, scale } = stream.output.sample();
    const counted = Math.round(
      (await estimator.count({ text }, { account: draft.accountId })).completion * scale,
    );
    completion = Math.max(completion, Math.min(counted, reserved - reported.prompt));
  }
  draft.setUsage(reported.prompt, completion, "upstream", reported);
}

/** The local estimate (src/tokens/estimator.ts) of the prompt the model read and of `written`. */
export async function estimateUsage(draft: CallDraft, req: ChatRequest, written: Written): Promise<void> {
  const { text, scale } = typeof written === "string" ? { text: written, scale: 1 } : written;
  const { prompt, completion } = await estimator.count(
    { ...promptParts(req), text },
    { account: draft.accountId },
  );
  draft.setUsage(prompt, Math.round(completion * scale), "estimated");
}

/**
 * The usage a client is told: the draft's figures as charged, and what the upstream reported.
 * An estimate is charged no more than the call held (`reserved`, CallDraft.noteReservation):
 * told before the record, it was told uncapped (the cluster suite's mixed load caught a
 * stream told 250 tokens whose record, on a partial hold of 171, charged 171).
 */
export function answerUsage(draft: CallDraft, reported: Usage | undefined, reserved: number): AnswerUsage {
  draft.noteReservation(reserved);
  return {
    prompt: draft.promptTokens,
    completion: draft.completionTokens,
    cachedInput: draft.cachedTokens,
    cacheWrite: draft.cacheWriteTokens,
    reasoning: draft.reasoningTokens,
    reported,
  };
}
