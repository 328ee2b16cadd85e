// What an upstream failure means for the client: the catalog entry for each way an
// upstream call can fail. Adapters describe the failure (UpstreamError); this decides the answer.

import { GatewayError } from "./gateway-error.ts";
import { UpstreamError } from "./upstream-error.ts";

/**
 * 504 for timeouts, 400 when the upstream refused the request as invalid or its content
 * filter refused the prompt, 502 otherwise (with its own code when the provider key was refused).
 */
export function fromUpstream(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof UpstreamError) {
    // The operator's problem, not the client's: said without the upstream's words, which may
    // quote part of the key.
    if (err.refused === "key")
      return new GatewayError("upstream_key_refused", {
        message: `The upstream refused the gateway's key for this model${err.status ? ` (HTTP ${err.status})` : ""}; the gateway's operator must check the provider's key.`,
        cause: err,
      });
    if (err.refused === "prompt")
      return new GatewayError("content_filter", {
        message: `The upstream's content filter refused the prompt${err.detail?.message ? `: ${err.detail.message}` : "."}`,
        cause: err,
      });
    if (err.failure === "timeout")
      return new GatewayError("upstream_timeout", { message: err.message, cause: err });
    if (err.failure === "status" && (err.status === 400 || err.status === 422))
      // The request is wrong for that model: clients act on the upstream's own code and param
      // (LangChain tells context overflow by `context_length_exceeded`), so both pass on.
      return new GatewayError("upstream_bad_request", {
        message: err.detail?.message ?? err.message,
        code: err.detail?.code,
        param: err.detail?.param ?? null,
        capability: err.detail?.capability,
        cause: err,
      });
    return new GatewayError("upstream_error", { message: err.message, cause: err });
  }
  if (err instanceof DOMException && err.name === "TimeoutError")
    return new GatewayError("upstream_timeout", { cause: err });
  return new GatewayError("internal_error", { cause: err });
}
