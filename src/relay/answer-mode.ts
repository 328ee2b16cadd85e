// How the answer leaves, decided once per call from `stream` and the account's safety
// settings (spec 4.2).
import type { SafetyMode } from "../records/draft.ts";
import type { SafetySettings } from "../safety/policy.ts";

/**
 * `sse` streams upstream chunks as they come; `json` is one body (also for `stream: true`
 * while safety is on); `reviewed` streams reviewed segments (opt-in).
 */
export type AnswerMode = "sse" | "json" | "reviewed";

export interface Answer {
  mode: AnswerMode;
  /** how safety applied, for the record; null when it is off */
  safetyMode: SafetyMode | null;
  /** headers that tell clients a reviewed answer, and a stream answered as one JSON body */
  headers: Record<string, string> | undefined;
}

const OFF_JSON: Answer = { mode: "json", safetyMode: null, headers: undefined };
const OFF_SSE: Answer = { mode: "sse", safetyMode: null, headers: undefined };

export function answerFor(stream: boolean, safety: SafetySettings): Answer {
  if (!safety.enabled) return stream ? OFF_SSE : OFF_JSON;
  if (!stream) return { mode: "json", safetyMode: "json", headers: { "x-content-safety": "on" } };
  const safetyMode = safety.streaming === "reviewed" ? "reviewed" : "json";
  return {
    mode: safetyMode,
    safetyMode,
    headers: { "x-content-safety": "on", "x-content-safety-stream": safetyMode },
  };
}
