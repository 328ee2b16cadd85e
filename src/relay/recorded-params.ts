// The request parameters a call record keeps: the sampling settings that explain an
// answer, never message text.
import type { ChatRequest } from "../domain/chat-request.ts";

const RECORDED_PARAMS = ["temperature", "top_p", "max_tokens", "max_completion_tokens", "n", "seed"] as const;

export function recordedParams(req: ChatRequest): string | null {
  const params: Record<string, unknown> = {};
  let any = false;
  for (const p of RECORDED_PARAMS) {
    if (req[p] !== undefined) {
      params[p] = req[p];
      any = true;
    }
  }
  return any ? JSON.stringify(params) : null;
}
