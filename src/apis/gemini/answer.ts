// A whole Gemini answer (GenerateContentResponse): from a Gemini upstream, its own response
// restamped with our id and the public model; from any other, built from the canonical
// completion. Usage in Gemini's usageMetadata: `promptTokenCount` is everything the model read
// (cache included, `cachedContentTokenCount` of it), `candidatesTokenCount` the answer without
// the thinking, which is `thoughtsTokenCount`.
import type { Completion, FinishReason } from "../../domain/completion.ts";
import type { ReviewOutcome } from "../../safety/policy.ts";
import { safetyExtension, withheldNotice } from "../../safety/withheld.ts";
import type { AnswerUsage, JsonAnswer } from "../types.ts";

type Json = Record<string, unknown>;

const FINISH_REASONS: Readonly<Record<FinishReason, string>> = {
  stop: "STOP",
  length: "MAX_TOKENS",
  // Gemini ends a turn that called functions with STOP: its clients look for the calls
  tool_calls: "STOP",
  function_call: "STOP",
  content_filter: "SAFETY",
};

/** Gemini's finishReason for a canonical finish reason. */
export function finishReason(finish: FinishReason | null | undefined): string {
  return (finish && FINISH_REASONS[finish]) || "STOP";
}

/** Gemini's usageMetadata from the figures as charged. */
export function usageMetadata(usage: AnswerUsage): Json {
  return {
    promptTokenCount: usage.prompt,
    candidatesTokenCount: Math.max(0, usage.completion - usage.reasoning),
    totalTokenCount: usage.prompt + usage.completion,
    ...(usage.reasoning ? { thoughtsTokenCount: usage.reasoning } : {}),
    ...(usage.cachedInput ? { cachedContentTokenCount: usage.cachedInput } : {}),
  };
}

/** A tool call's arguments as Gemini's `args` object; arguments that are no JSON object read as none. */
export function callArgs(args: unknown): Json {
  if (typeof args !== "string") return {};
  try {
    const parsed: unknown = JSON.parse(args || "{}");
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Json) : {};
  } catch {
    return {};
  }
}

/** The reasoning an OpenAI-shaped message or delta carries (vLLM, DeepSeek, SGLang; OpenRouter). */
export function reasoningOf(part: Json | undefined): string | undefined {
  const r = part?.reasoning_content ?? part?.reasoning;
  return typeof r === "string" && r ? r : undefined;
}

/** A canonical tool call as a functionCall part; its id goes with it, for the response to name. */
export function functionCallPart(call: {
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}): Json {
  return {
    functionCall: {
      ...(typeof call.id === "string" && call.id ? { id: call.id } : {}),
      name: typeof call.function?.name === "string" ? call.function.name : "",
      args: callArgs(call.function?.arguments),
    },
  };
}

export interface RenderOptions {
  /** the client asked for thought summaries: reasoning the upstream sent comes as `thought` parts */
  thoughts: boolean;
}

/** A candidate's content: thought summary, text, function calls (none: no content, as Gemini blocks). */
function candidateOf(choice: Completion["choices"][number], options: RenderOptions): Json {
  const message = choice.message as Json;
  const parts: Json[] = [];
  const reasoning = options.thoughts ? reasoningOf(message) : undefined;
  if (reasoning) parts.push({ text: reasoning, thought: true });
  if (typeof message.content === "string" && message.content) parts.push({ text: message.content });
  if (Array.isArray(message.tool_calls))
    for (const call of message.tool_calls as Parameters<typeof functionCallPart>[0][])
      parts.push(functionCallPart(call));
  const finish = finishReason(choice.finish_reason);
  if (!parts.length && finish !== "SAFETY") parts.push({ text: "" });
  return {
    ...(parts.length ? { content: { parts, role: "model" } } : {}),
    finishReason: finish,
    index: choice.index,
  };
}

/** The candidates of a withheld answer: the notice alone, an ordinary end of turn. */
export function withheldCandidates(indexes: Iterable<number>, requestId: string): Json[] {
  return [...indexes].map((index) => ({
    content: { parts: [{ text: withheldNotice(requestId) }], role: "model" },
    finishReason: "STOP",
    index,
  }));
}

/** The whole answer's body. */
export function responseBody(answer: JsonAnswer, options: RenderOptions): string {
  const { completion, withheld } = answer;
  const native = completion.native;
  const body: Json = native
    ? { ...native, modelVersion: answer.model, responseId: answer.requestId }
    : {
        candidates: completion.choices.map((c) => candidateOf(c, options)),
        usageMetadata: usageMetadata(answer.usage),
        modelVersion: answer.model,
        responseId: answer.requestId,
      };
  if (withheld) withhold(body, answer, withheld);
  return JSON.stringify(body);
}

/**
 * Withheld: the notice in place of every candidate, finishing as an ordinary turn (STOP, not
 * SAFETY: Gemini's clients word SAFETY as Google's own safety filter), usage kept, and the
 * documented `safety` extension.
 */
function withhold(body: Json, answer: JsonAnswer, outcome: ReviewOutcome): void {
  const indexes = answer.completion.choices.map((c) => c.index);
  body.candidates = withheldCandidates(indexes.length ? indexes : [0], answer.requestId);
  delete body.promptFeedback;
  body.usageMetadata ??= usageMetadata(answer.usage);
  body.safety = safetyExtension(outcome);
}
