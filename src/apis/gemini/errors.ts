// Errors as Google's APIs answer them, mapped from the one catalog: the envelope
// `{"error":{"code","message","status","details"}}` with google.rpc status names by HTTP
// status, so that Google's SDKs (@google/genai's ApiError, google-genai's APIError) and Gemini
// CLI read them. The catalog's code travels in an ErrorInfo detail (`reason` in Google's
// UPPER_SNAKE form, the code itself in `metadata.error_code`); the field at fault in a
// BadRequest detail; when to retry in a RetryInfo detail, which Gemini CLI waits out.
import type { GatewayError } from "../../errors/index.ts";
import type { ErrorAnswer } from "../types.ts";

/** google.rpc.Code names by the HTTP status Google answers them with (google/rpc/code.proto). */
const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  408: "DEADLINE_EXCEEDED",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "NOT_IMPLEMENTED",
  // no upstream answered well: what the client can do is what UNAVAILABLE says, try again
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** The status name of an HTTP status: Google's, else the class's (a body too large is a bad argument). */
export function statusName(status: number): string {
  return STATUS_NAMES[status] ?? (status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT");
}

/** Reasons Google's clients already know, for the catalog codes that mean the same. */
const REASONS: Readonly<Record<string, string>> = {
  invalid_api_key: "API_KEY_INVALID",
  missing_api_key: "API_KEY_MISSING",
};

const DOMAIN = "chat-gateway";

/** The `{"error": …}` object of a body, and of a stream's error event. */
export function googleErrorBody(error: GatewayError) {
  const details: Record<string, unknown>[] = [
    {
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: REASONS[error.errorName] ?? error.code.toUpperCase(),
      domain: DOMAIN,
      metadata: { error_code: error.code, ...(error.param ? { param: error.param } : {}) },
    },
  ];
  if (error.param && error.status === 400)
    details.push({
      "@type": "type.googleapis.com/google.rpc.BadRequest",
      fieldViolations: [{ field: error.param, description: error.message }],
    });
  const retryAfter = Number(error.headers?.["retry-after"]);
  if (Number.isFinite(retryAfter) && retryAfter > 0)
    details.push({ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${retryAfter}s` });
  return {
    error: { code: error.status, message: error.message, status: statusName(error.status), details },
  };
}

export function googleErrorAnswer(error: GatewayError): ErrorAnswer {
  return { status: error.status, body: JSON.stringify(googleErrorBody(error)) };
}
