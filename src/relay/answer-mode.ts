// How the answer leaves, decided once per call from `stream`, the account's safety settings
// and the client API (spec 4.2).
import type { ApiName } from "../domain/api-names.ts";
import type { SafetyMode } from "../records/draft.ts";
import type { CallSafety, SafetySettings } from "../safety/policy.ts";

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

/**
 * The spec's JSON answer to `stream: true` is a chat completions rule. A Messages or Responses
 * client asking for a stream is a coding agent or an SDK's stream helper, which cannot read a
 * JSON body: Claude Code drops it and sends the turn again without `stream` (two upstream
 * calls, both charged). Those APIs stream reviewed segments unless the operator chose `json`
 * for the account, its plan or globally (`streamingChosen`); a plain SafetySettings (no
 * `streamingChosen`) is taken as chosen.
 */
export function answerFor(
  stream: boolean,
  safety: SafetySettings | CallSafety,
  api: ApiName = "chat.completions",
): Answer {
  if (!safety.enabled) return stream ? OFF_SSE : OFF_JSON;
  if (!stream) return { mode: "json", safetyMode: "json", headers: { "x-content-safety": "on" } };
  const agentDefault = api !== "chat.completions" && (safety as CallSafety).streamingChosen === false;
  const safetyMode = agentDefault || safety.streaming === "reviewed" ? "reviewed" : "json";
  return {
    mode: safetyMode,
    safetyMode,
    headers: { "x-content-safety": "on", "x-content-safety-stream": safetyMode },
  };
}
