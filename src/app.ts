// buildApp(deps): the Fastify application with its hooks and routes. No I/O happens here;
// server.ts opens the store and the rest, then builds the app from them.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type { AuthContext } from "./auth/key-cache.ts";
import { newId } from "./auth/key-format.ts";
import { GatewayError } from "./errors/index.ts";
import type { GatewayDeps } from "./http/deps.ts";
import { clientErrorHandler, registerErrorHandling } from "./http/error-handler.ts";
import { registerJsonBody } from "./http/json-body.ts";
import { opsRoutes } from "./http/routes/ops.ts";
import { v1Routes } from "./http/routes/v1/index.ts";
import type { CallDraft } from "./records/draft.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the key and account, once the auth hook passed */
    auth: AuthContext | null;
    /** the call record being filled in (chat completions only) */
    call: CallDraft | null;
  }
}

export function buildApp(deps: GatewayDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // one line per request, written by the close listener below, instead of Fastify's two
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: "request_id" }),
    genReqId: () => newId("req"),
    bodyLimit: deps.config.server.body_limit_bytes,
    return503OnClosing: false,
    forceCloseConnections: "idle",
    keepAliveTimeout: 65_000,
    clientErrorHandler,
  });
  app.decorateRequest("auth", null);
  app.decorateRequest("call", null);

  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
    const started = performance.now();
    reply.raw.once("close", () => {
      const route = request.routeOptions.url ?? "unmatched";
      const status = reply.raw.writableFinished ? reply.raw.statusCode : 499;
      const seconds = (performance.now() - started) / 1000;
      deps.metrics.requests.inc({ route, status });
      deps.metrics.requestSeconds.observe({ route }, seconds);
      request.log.info(
        {
          method: request.method,
          route,
          status,
          ms: Math.round(seconds * 1000),
          account: request.auth?.account.id,
          key: request.auth?.key.id,
        },
        "request",
      );
    });
    if (deps.isClosing()) {
      reply.header("connection", "close");
      throw new GatewayError("shutting_down");
    }
  });

  registerJsonBody(app);
  registerErrorHandling(app, deps);
  app.register(opsRoutes, deps);
  app.register(v1Routes, deps);
  return app;
}
