// Anthropic's Messages wire format as it answers, read leniently: what the translation needs
// is checked, new block and event types are ignored (Anthropic adds them over time).

import { z } from "zod";
import type { FinishReason, Usage } from "../../domain/completion.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import { sanitizeUpstreamMessage } from "../sanitize.ts";
import { capabilityRefused } from "./capability-classes.ts";

const count = z.number().int().nonnegative();

/**
 * Anthropic's usage. `input_tokens` excludes the cache: what the model read is input plus
 * cache writes plus cache reads. Stream events may carry only some fields.
 */
export const usageSchema = z.looseObject({
  input_tokens: count.nullish().catch(undefined),
  output_tokens: count.nullish().catch(undefined),
  cache_creation_input_tokens: count.nullish().catch(undefined),
  cache_read_input_tokens: count.nullish().catch(undefined),
});
export type AnthropicUsage = z.output<typeof usageSchema>;

export const blockSchema = z.looseObject({
  type: z.string(),
  text: z.string().optional().catch(undefined),
  thinking: z.string().optional().catch(undefined),
  id: z.string().optional().catch(undefined),
  name: z.string().optional().catch(undefined),
  input: z.unknown().optional(),
});

export const messageSchema = z.looseObject({
  id: z.string().optional().catch(undefined),
  model: z.string().optional().catch(undefined),
  content: z.array(blockSchema),
  stop_reason: z.string().nullish().catch(undefined),
  usage: usageSchema.optional().catch(undefined),
});

/** One stream event's data; its `type` repeats the SSE event name. */
export const eventSchema = z.looseObject({
  type: z.string(),
  index: z.number().int().nonnegative().optional().catch(undefined),
  message: z
    .looseObject({ id: z.string().optional(), model: z.string().optional(), usage: usageSchema.optional() })
    .optional()
    .catch(undefined),
  content_block: blockSchema.optional().catch(undefined),
  delta: z
    .looseObject({
      type: z.string().optional(),
      text: z.string().optional().catch(undefined),
      partial_json: z.string().optional().catch(undefined),
      thinking: z.string().optional().catch(undefined),
      stop_reason: z.string().nullish().catch(undefined),
    })
    .optional()
    .catch(undefined),
  usage: usageSchema.optional().catch(undefined),
});

/** Anthropic's error object, in an error body or an `error` event. */
export const errorSchema = z.looseObject({
  error: z.looseObject({
    type: z.string().optional().catch(undefined),
    message: z.string().optional().catch(undefined),
    details: z
      .looseObject({ error_code: z.string().nullish().catch(undefined) })
      .nullish()
      .catch(undefined),
  }),
});

const FINISH: Readonly<Record<string, FinishReason>> = {
  end_turn: "stop",
  stop_sequence: "stop",
  // server-tool loops only, which the gateway never starts
  pause_turn: "stop",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  tool_use: "tool_calls",
  refusal: "content_filter",
};

export function finishReason(stopReason: string | null | undefined): FinishReason {
  return (stopReason && FINISH[stopReason]) || "stop";
}

/** Anthropic's usage in our convention (src/providers/types.ts: prompt is all the model read). */
export function readUsage(u: AnthropicUsage): Usage {
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const cacheWrite = u.cache_creation_input_tokens ?? 0;
  return {
    prompt: (u.input_tokens ?? 0) + cacheWrite + cacheRead,
    completion: u.output_tokens ?? 0,
    cachedInput: cacheRead,
    cacheWrite,
    // Anthropic bills thinking as output but does not count it apart.
    reasoning: 0,
    details: { prompt_tokens_details: { cached_tokens: cacheRead } },
  };
}

/** The HTTP status each error type comes with (platform.claude.com/docs/en/api/errors). */
const ERROR_STATUS: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/**
 * An Anthropic error as an UpstreamError. `status` is the HTTP status, or undefined for an
 * `error` event inside a 200 stream, which then takes the status its type comes with.
 */
export function anthropicError(status: number | undefined, raw: unknown, retryAfter?: number): UpstreamError {
  const parsed = errorSchema.safeParse(raw);
  const error = parsed.success ? parsed.data.error : undefined;
  const said = error?.message ? sanitizeUpstreamMessage(error.message) : undefined;
  const effective = status ?? (error?.type ? ERROR_STATUS[error.type] : undefined);
  const message = status
    ? `the upstream answered HTTP ${status}${said ? `: ${said}` : ""}`
    : `the upstream reported an error${error?.type ? ` (${error.type})` : ""}${said ? `: ${said}` : ""}`;
  // A spend limit reached is not "slow down": no retry succeeds until someone raises it.
  const spendLimit =
    effective === 429 &&
    (error?.details?.error_code === "enforced_spend_limit_reached" ||
      /spend limit/i.test(error?.message ?? ""));
  return new UpstreamError("status", message, {
    status: effective,
    retryable: spendLimit ? false : undefined,
    retryAfterMs: retryAfter,
    refused: effective === 401 || effective === 403 ? "key" : undefined,
    detail: {
      message: said,
      capability: effective === 400 || effective === 413 ? capabilityRefused(error?.message) : undefined,
    },
  });
}
