// Operations endpoints: liveness (/livez, and /healthz as before), readiness (/readyz: the
// checks of ../readiness.ts), Prometheus metrics (behind a bearer token when metrics.token_env
// names one). They answer while the gateway drains after SIGTERM: a load balancer learns from
// /readyz that the instance is going, and the process is still alive until it exits.
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { hashKey, parseBearer } from "../../accounts/key-format.ts";
import { GatewayError } from "../../errors/index.ts";
import type { GatewayDeps } from "../deps.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** answered while the gateway drains, where other routes get 503 `shutting_down` */
    servesWhileDraining?: boolean;
  }
}

const whileDraining = { config: { servesWhileDraining: true } };

export async function opsRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  // The process answers: nothing else is checked, so a dependency's outage never has the
  // instance restarted (that is /readyz's to report).
  const live = async () => ({ status: "ok" });
  app.get("/livez", whileDraining, live);
  app.get("/healthz", whileDraining, live);

  app.get("/readyz", whileDraining, async (_request, reply) => {
    const answer = await deps.readiness();
    return reply
      .code(answer.status === "ready" ? 200 : 503)
      .header("cache-control", "no-store")
      .send(answer);
  });

  // compared as digests: equal lengths for timingSafeEqual, and no early exit on a prefix
  const wanted = deps.metricsToken === undefined ? undefined : Buffer.from(hashKey(deps.metricsToken));
  app.get("/metrics", whileDraining, async (request, reply) => {
    if (wanted) {
      const bearer = parseBearer(request.headers.authorization);
      if (bearer.kind !== "token" || !timingSafeEqual(Buffer.from(hashKey(bearer.token)), wanted))
        throw new GatewayError("metrics_unauthenticated", { headers: { "www-authenticate": "Bearer" } });
    }
    return reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
}
