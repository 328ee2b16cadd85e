// What an upstream failure means for the client: the catalog entry for each way an
// upstream call can fail. Adapters describe the failure (UpstreamError); this decides the answer.
import { UpstreamError } from "../providers/upstream-error.ts";
import { GatewayError } from "./gateway-error.ts";

/** 504 for timeouts, 400 when the upstream refused the request as invalid, 502 otherwise. */
export function fromUpstream(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof UpstreamError) {
    if (err.failure === "timeout")
      return new GatewayError("upstream_timeout", { message: err.message, cause: err });
    if (err.failure === "status" && (err.status === 400 || err.status === 422))
      // The request is wrong for that model: clients act on the upstream's own code and param
      // (LangChain tells context overflow by `context_length_exceeded`), so both pass on.
      return new GatewayError("upstream_bad_request", {
        message: err.detail?.message ?? err.message,
        code: err.detail?.code,
        param: err.detail?.param ?? null,
        cause: err,
      });
    return new GatewayError("upstream_error", { message: err.message, cause: err });
  }
  if (err instanceof DOMException && err.name === "TimeoutError")
    return new GatewayError("upstream_timeout", { cause: err });
  return new GatewayError("internal_error", { cause: err });
}
