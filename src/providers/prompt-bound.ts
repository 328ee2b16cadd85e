// The prompt part of a reservation, until providers state their own rule: the local o200k
// count with a margin for tokenizers that count more.
import type { ChatRequest } from "../apis/chat-completions/request.ts";
import { countPromptTokens } from "../tokens/count.ts";

/** The local prompt count is o200k; other tokenizers count somewhat more. Reserve for that. */
const PROMPT_MARGIN = 1.1;

/** Tokens held for a prompt of `promptTokens` local tokens. */
export function promptReservation(promptTokens: number): number {
  return Math.ceil(promptTokens * PROMPT_MARGIN);
}

/** The local count of what the request sends the model: messages, and tools or a schema. */
export function localPromptTokens(request: ChatRequest): number {
  return countPromptTokens(request.messages, request.tools ?? request.functions ?? request.response_format);
}

export function estimatedPromptBound(request: ChatRequest): number {
  return promptReservation(localPromptTokens(request));
}
