// Errors as Anthropic's API answers them, mapped from the one catalog: its envelope
// `{"type":"error","error":{"type","message","details"}}` and its statuses, so that
// @anthropic-ai/sdk raises its typed errors (AuthenticationError, RateLimitError,
// OverloadedError, …). The catalog's code travels as `details.error_code`, where Anthropic
// puts its own codes (the SDK's `errorCode`).
import type { GatewayError } from "../../errors/index.ts";
import type { ErrorAnswer } from "../types.ts";

/** Anthropic's error types by the status it answers them with (platform.claude.com api/errors). */
const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  504: "timeout_error",
  529: "overloaded_error",
};

/**
 * Status and type for an error. Every upstream of the model rate-limited is the capacity
 * behind the gateway exhausted, not the client's own limit: Anthropic says that with 529
 * `overloaded_error`, which its clients (Claude Code) wait out and retry.
 */
export function anthropicStatus(error: GatewayError): { status: number; type: string } {
  if (error.errorName === "upstream_rate_limited") return { status: 529, type: "overloaded_error" };
  const status = error.status;
  const type = TYPE_BY_STATUS[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
  return { status, type };
}

/**
 * The error object Anthropic sends in a body and in a stream's `error` event. A refusal of a
 * capability the upstream lacks is worded as Claude Code's gateway contract asks, the message
 * being the token `capability_rejected: <class>` alone (its fallbacks match it exactly: it
 * then retries without the construct); the gateway's own words go in `details.reason`.
 */
export function anthropicErrorBody(error: GatewayError) {
  const capability = error.status === 400 ? error.capability : undefined;
  return {
    type: "error",
    error: {
      type: anthropicStatus(error).type,
      message: capability ? `capability_rejected: ${capability}` : error.message,
      details: {
        error_code: error.code,
        ...(error.param ? { param: error.param } : {}),
        ...(capability ? { reason: error.message } : {}),
      },
    },
  };
}

export function anthropicErrorAnswer(error: GatewayError): ErrorAnswer {
  return { status: anthropicStatus(error).status, body: JSON.stringify(anthropicErrorBody(error)) };
}
