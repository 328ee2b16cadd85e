// Gemini's GenerateContentResponse as it answers (whole, or one per SSE event), read
// leniently, and its usage, finish reasons and errors in our terms.
import { z } from "zod";
import type { FinishReason, Usage } from "../../domain/completion.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import { sanitizeUpstreamMessage } from "../sanitize.ts";

const count = z.number().int().nonnegative().nullish().catch(undefined);

export const partSchema = z.looseObject({
  text: z.string().optional().catch(undefined),
  thought: z.boolean().optional().catch(undefined),
  thoughtSignature: z.string().optional().catch(undefined),
  functionCall: z
    .looseObject({ name: z.string(), args: z.record(z.string(), z.unknown()).nullish().catch(undefined) })
    .optional()
    .catch(undefined),
});
export type GeminiPart = z.output<typeof partSchema>;

export const usageSchema = z.looseObject({
  promptTokenCount: count,
  candidatesTokenCount: count,
  thoughtsTokenCount: count,
  cachedContentTokenCount: count,
  toolUsePromptTokenCount: count,
});

export const responseSchema = z.looseObject({
  candidates: z
    .array(
      z.looseObject({
        index: z.number().int().nonnegative().optional().catch(undefined),
        content: z
          .looseObject({ parts: z.array(partSchema).optional().catch(undefined) })
          .nullish()
          .catch(undefined),
        finishReason: z.string().nullish().catch(undefined),
      }),
    )
    .optional()
    .catch(undefined),
  promptFeedback: z
    .looseObject({ blockReason: z.string().nullish().catch(undefined) })
    .nullish()
    .catch(undefined),
  usageMetadata: usageSchema.nullish().catch(undefined),
  modelVersion: z.string().optional().catch(undefined),
  responseId: z.string().optional().catch(undefined),
});
export type GeminiResponse = z.output<typeof responseSchema>;

const errorSchema = z.looseObject({
  error: z.looseObject({
    code: z.number().int().optional().catch(undefined),
    message: z.string().optional().catch(undefined),
    status: z.string().optional().catch(undefined),
    details: z
      .array(z.looseObject({ reason: z.string().optional().catch(undefined) }))
      .optional()
      .catch(undefined),
  }),
});

/** The safety-type finish reasons; the others that are not STOP or MAX_TOKENS read as stop. */
const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"]);

/** Gemini has no tool-call finish reason: a candidate that called a function finished with tool_calls. */
export function finishReason(reason: string | null | undefined, calledFunction: boolean): FinishReason {
  if (reason === "MAX_TOKENS") return "length";
  if (reason && FILTERED.has(reason)) return "content_filter";
  return calledFunction ? "tool_calls" : "stop";
}

/**
 * Gemini's usage in our convention: the prompt with the tool-use prompt, the completion with
 * the thinking (billed as output), which is also the reasoning figure.
 */
export function readUsage(u: z.output<typeof usageSchema>): Usage {
  const cached = u.cachedContentTokenCount ?? 0;
  const thoughts = u.thoughtsTokenCount ?? 0;
  return {
    prompt: (u.promptTokenCount ?? 0) + (u.toolUsePromptTokenCount ?? 0),
    completion: (u.candidatesTokenCount ?? 0) + thoughts,
    cachedInput: cached,
    cacheWrite: 0,
    reasoning: thoughts,
    details: {
      prompt_tokens_details: { cached_tokens: cached },
      completion_tokens_details: { reasoning_tokens: thoughts },
    },
  };
}

/** Whether a GenerateContentResponse-like object is an error report (in a 200 stream). */
export function isError(raw: unknown): boolean {
  return (raw as { error?: unknown } | null)?.error != null;
}

/**
 * A Gemini error as an UpstreamError. `status` is the HTTP status, or undefined for an
 * error inside a 200 stream, which then takes its own `code`. A key Gemini does not know is
 * a 400 with reason API_KEY_INVALID: a refused key all the same.
 */
export function geminiError(status: number | undefined, raw: unknown, retryAfter?: number): UpstreamError {
  const parsed = errorSchema.safeParse(raw);
  const error = parsed.success ? parsed.data.error : undefined;
  const said = error?.message ? sanitizeUpstreamMessage(error.message) : undefined;
  const effective = status ?? error?.code;
  const badKey = error?.details?.some((d) => d.reason === "API_KEY_INVALID") ?? false;
  const message = status
    ? `the upstream answered HTTP ${status}${said ? `: ${said}` : ""}`
    : `the upstream reported an error${error?.status ? ` (${error.status})` : ""}${said ? `: ${said}` : ""}`;
  return new UpstreamError("status", message, {
    status: effective,
    retryAfterMs: retryAfter,
    refused: badKey || effective === 401 || effective === 403 ? "key" : undefined,
    detail: { message: said },
  });
}
