// Operations endpoints: liveness, readiness (the store answers), Prometheus metrics (behind
// a bearer token when metrics.token_env names one).
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { hashKey, parseBearer } from "../../accounts/key-format.ts";
import { GatewayError } from "../../errors/index.ts";
import { ping } from "../../store/db.ts";
import type { GatewayDeps } from "../deps.ts";

export async function opsRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  app.get("/healthz", async () => ({ status: "ok" }));

  app.get("/readyz", async (request, reply) => {
    if (deps.isClosing()) throw new GatewayError("shutting_down");
    try {
      await ping(deps.store);
    } catch (err) {
      request.log.warn({ err }, "store not reachable");
      const error = new GatewayError("internal_error", { message: "The store is not reachable." });
      return reply.code(503).send(error.toBody());
    }
    return { status: "ready", store: deps.store.dialect };
  });

  // compared as digests: equal lengths for timingSafeEqual, and no early exit on a prefix
  const wanted = deps.metricsToken === undefined ? undefined : Buffer.from(hashKey(deps.metricsToken));
  app.get("/metrics", async (request, reply) => {
    if (wanted) {
      const bearer = parseBearer(request.headers.authorization);
      if (bearer.kind !== "token" || !timingSafeEqual(Buffer.from(hashKey(bearer.token)), wanted))
        throw new GatewayError("metrics_unauthenticated", { headers: { "www-authenticate": "Bearer" } });
    }
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
}
