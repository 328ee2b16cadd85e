// Operations endpoints: liveness, readiness (the store answers), Prometheus metrics.
import type { FastifyInstance } from "fastify";
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

  app.get("/metrics", async (_request, reply) => {
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
}
