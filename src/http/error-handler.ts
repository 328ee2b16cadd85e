// One place where every failure becomes the error envelope (spec 7): thrown GatewayErrors,
// Fastify's own errors (body too large, bad content type), malformed HTTP, and bugs. A route
// of a client API answers in that API's envelope and statuses (src/apis/types.ts).
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { GatewayError } from "../errors/index.ts";
import type { Metrics } from "../observability/metrics.ts";
import { bodyTooLarge } from "./body-limits.ts";
import type { GatewayDeps } from "./deps.ts";
import { pathApi, routeApi } from "./route-api.ts";

/** Fastify's error codes that a client causes, mapped to our catalog. */
function fromFastify(err: FastifyError): GatewayError | undefined {
  switch (err.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new GatewayError("request_too_large");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new GatewayError("unsupported_media_type");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new GatewayError("invalid_json", { message: "The request body is empty." });
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
    case "FST_ERR_CTP_INVALID_TYPE":
      return new GatewayError("invalid_request", {
        message: "The request's Content-Length or body is invalid.",
      });
    default:
      if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
        return new GatewayError("invalid_request", { message: "The request is not valid." });
      return undefined;
  }
}

export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return fromFastify(err as FastifyError) ?? new GatewayError("internal_error", { cause: err });
}

/**
 * Reads and drops the rest of a request body after an early answer, at most `body_discard_bytes`
 * more and for `body_discard_ms`, as robust servers do (nginx's lingering close): the client
 * reads the answer and stops, or finishes, and the connection serves its next request. Past
 * either bound the connection is closed, and a client still sending then sees a reset.
 */
function discardRest(
  req: IncomingMessage,
  bounds: { body_discard_bytes: number; body_discard_ms: number },
): void {
  const socket = req.socket;
  let left = bounds.body_discard_bytes;
  const giveUp = setTimeout(() => socket.destroy(), bounds.body_discard_ms);
  // The request is detached once its answer is sent and no longer closes with the socket.
  const done = () => {
    clearTimeout(giveUp);
    socket.off("close", done);
  };
  socket.once("close", done);
  req.once("end", done);
  req.on("data", (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) socket.destroy();
  });
}

export function registerErrorHandling(app: FastifyInstance, deps: GatewayDeps): void {
  app.setErrorHandler(async (err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // A body over the limit is told which limit and which setting (./body-limits.ts).
    const error =
      (err as FastifyError | undefined)?.code === "FST_ERR_CTP_BODY_TOO_LARGE"
        ? bodyTooLarge(request, deps.config.server)
        : toGatewayError(err);
    if (error.status >= 500 && error.errorName === "internal_error")
      request.log.error({ err }, "request failed inside the gateway");
    if (reply.sent || reply.raw.headersSent) {
      // Too late for an envelope (a bug after a stream began): cut the connection.
      reply.raw.destroy();
      return reply;
    }
    const answer = routeApi(request).error(error);
    const draft = request.call;
    if (draft && !draft.written) await deps.finisher.fail(draft, error, undefined, answer.status);
    if (reply.raw.destroyed) return reply; // the client left: nobody to answer
    deps.metrics.observeRefusal(error, answer.status);
    if (error.headers) reply.headers(error.headers);
    // Refused before its body was read (no key, too large). Closing now would reset the
    // connection under a client still sending, and fetch (the openai SDK's transport) then
    // reports EPIPE instead of this answer, which the SDK retries with the whole body again.
    // A closing gateway still closes (set by the onRequest hook).
    if (!request.raw.complete && !deps.isClosing()) {
      reply.removeHeader("connection"); // Fastify asks for a close after any body it refused
      discardRest(request.raw, deps.config.server);
    }
    return reply.code(answer.status).type("application/json").send(answer.body);
  });

  app.setNotFoundHandler(async (request, reply) => {
    const error = new GatewayError("route_not_found", {
      message: `Unknown route: ${request.method} ${request.url.split("?")[0]!.slice(0, 200)}`,
    });
    const api = pathApi(request.url);
    if (api.requestIdHeader) reply.header(api.requestIdHeader, request.id);
    const answer = api.error(error);
    deps.metrics.observeRefusal(error, answer.status);
    return reply.code(answer.status).type("application/json").send(answer.body);
  });
}

const REASONS: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
};

/**
 * Answers requests Node's HTTP parser refuses before Fastify sees them (bad header bytes,
 * oversized headers) with the envelope too, instead of a bare "400 Bad Request"; and requests
 * whose headers or body did not arrive in time (server.headers_timeout_ms and
 * request_timeout_ms) with 408.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket, metrics?: Metrics): void {
  // a response already begun on this connection cannot be followed by another one
  const response = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  if (!socket.writable || response?.headersSent) {
    socket.destroy();
    return;
  }
  const error =
    err.code === "HPE_HEADER_OVERFLOW"
      ? new GatewayError("headers_too_large")
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? new GatewayError("request_timeout")
        : new GatewayError("malformed_http");
  const body = JSON.stringify(error.toBody());
  metrics?.observeRefusal(error, error.status);
  socket.end(
    `HTTP/1.1 ${error.status} ${REASONS[error.status]}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
