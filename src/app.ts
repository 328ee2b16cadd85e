// buildApp(deps): the Fastify application with its hooks and routes. No I/O happens here;
// server.ts opens the store and the rest, then builds the app from them.
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from "fastify";
import { newRequestId } from "./accounts/key-format.ts";
import type { AuthContext } from "./auth/key-cache.ts";
import { GatewayError } from "./errors/index.ts";
import { limitConnections } from "./http/connection-limits.ts";
import { consoleStatic } from "./http/console-static.ts";
import { registerCors } from "./http/cors.ts";
import type { GatewayDeps } from "./http/deps.ts";
import { clientErrorHandler, registerErrorHandling } from "./http/error-handler.ts";
import { registerJsonBody } from "./http/json-body.ts";
import { adminRoutes } from "./http/routes/admin/index.ts";
import { consoleRoutes } from "./http/routes/console/index.ts";
import { opsRoutes } from "./http/routes/ops.ts";
import { v1Routes } from "./http/routes/v1/index.ts";
import { requestLine, requestLogger } from "./observability/request-logger.ts";
import type { CallDraft } from "./records/draft.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the key and account, once the auth hook passed */
    auth: AuthContext | null;
    /** the call record being filled in (chat completions only) */
    call: CallDraft | null;
  }
}

function noSchemaCompiler(): never {
  throw new Error("the gateway's routes declare no JSON schema: validate the body with zod (src/apis)");
}

export function buildApp(deps: GatewayDeps): FastifyInstance {
  const server = deps.config.server;
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // one line per request, written by the close listener below, instead of Fastify's two
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "request_id" }),
    childLoggerFactory: requestLogger,
    genReqId: () => newRequestId(),
    bodyLimit: deps.config.server.body_limit_bytes,
    return503OnClosing: false,
    // No route declares a JSON schema: each API validates its body with its own zod schema and
    // answers with JSON.stringify. Fastify's default compilers load ajv and fast-json-stringify
    // (96 modules) at start-up all the same, 3 MB of an idle instance (decision 0042); a route
    // given a schema fails at start-up instead.
    schemaController: {
      compilersFactory: { buildValidator: noSchemaCompiler, buildSerializer: noSchemaCompiler },
    },
    forceCloseConnections: "idle",
    keepAliveTimeout: server.keep_alive_timeout_ms,
    // Receiving a request (headers and body) is bounded; the response is not (streams last
    // minutes). Fastify's default of 0 would also switch off Node's headers timeout.
    requestTimeout: server.request_timeout_ms,
    clientErrorHandler: (err, socket) => clientErrorHandler(err, socket, deps.metrics),
    http: {
      headersTimeout: server.headers_timeout_ms,
      // how often Node looks for requests past those timeouts (its default is 30 s)
      connectionsCheckingInterval: Math.min(1_000, Math.ceil(server.headers_timeout_ms / 4)),
      // Two Authorization headers arrive joined ("Bearer a, Bearer b") and match no key,
      // instead of Node silently keeping the first one.
      joinDuplicateHeaders: true,
      // Node would answer a missing Host with a bare 400; the hook below answers the envelope.
      requireHostHeader: false,
    },
    // URLs the router cannot decode (e.g. a stray "%") get the envelope, not Fastify's body.
    frameworkErrors: (_err, request, reply) => {
      const error = new GatewayError("malformed_http", { message: "The request URL is not valid." });
      deps.metrics.observeRefusal(error, error.status);
      (reply as unknown as FastifyReply)
        .header("x-request-id", request.id)
        .code(error.status)
        .type("application/json")
        .send(error.toBody());
    },
  });
  limitConnections(app.server, server);
  app.decorateRequest("auth", null);
  app.decorateRequest("call", null);
  // first, so every answer (a refusal while shutting down too) carries the CORS headers
  registerCors(app, server.cors_origins);

  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
    const started = performance.now();
    reply.raw.once("close", () => {
      const route = request.routeOptions.url ?? "unmatched";
      const status = reply.raw.writableFinished ? reply.raw.statusCode : 499;
      const seconds = (performance.now() - started) / 1000;
      deps.metrics.observeRequest(route, status, seconds);
      // by the parent logger: a request's own is made only if the request logs something else
      if (deps.logger.isLevelEnabled("info"))
        deps.logger.info(
          requestLine(
            {
              request_id: request.id,
              method: request.method,
              route,
              status,
              ms: Math.round(seconds * 1000),
              account: request.auth?.account.id,
              key: request.auth?.key.id,
            },
            request.call,
          ),
          "request",
        );
    });
    if (request.raw.httpVersion === "1.1" && !request.headers.host)
      throw new GatewayError("malformed_http", { message: "An HTTP/1.1 request needs a Host header." });
    if (deps.isClosing()) {
      // Draining (docs/health.md): each connection closes after its answer; the probes and
      // metrics are answered, anything else is refused.
      reply.header("connection", "close");
      if (!request.routeOptions.config?.servesWhileDraining) throw new GatewayError("shutting_down");
    }
  });
  // an answer of a call that was in flight when draining began closes its connection too
  // (a callback hook: no promise per answer)
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (deps.isClosing()) reply.header("connection", "close");
    done(null, payload);
  });

  registerJsonBody(app);
  registerErrorHandling(app, deps);
  app.register(opsRoutes, deps);
  app.register(v1Routes, deps);
  app.register(consoleRoutes, deps);
  app.register(adminRoutes, deps);
  app.register(consoleStatic, {});
  return app;
}
