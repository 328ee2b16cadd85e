// Builds the routing of a running gateway from its configuration: the cooldown store (this
// process's, or Redis's when store.redis_url is set), the traffic figures, the router, and
// the health each instance publishes for `gateway deployments`.
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import { modelDeployments } from "../config/deployments.ts";
import type { Config, RoutingConfig } from "../config/schema.ts";
import type { Metrics } from "../observability/metrics.ts";
import { warnUnlessUnreachable } from "../store/reachability.ts";
import type { Database } from "../store/schema.ts";
import { type CooldownListener, type CooldownStore, MemoryCooldowns } from "./cooldowns.ts";
import { HealthPublisher, HealthView } from "./health.ts";
import { RedisCooldowns } from "./redis-cooldowns.ts";
import { Router } from "./route.ts";
import { Traffic } from "./traffic.ts";

export interface Routing {
  router: Router;
  cooldowns: CooldownStore;
  health: HealthView;
  publisher: HealthPublisher;
  /**
   * A router with other settings over the same cooldowns and traffic (a configuration
   * reload); `routing.cooldown` stays the one the cooldowns were started with.
   */
  routerFor(settings: RoutingConfig): Router;
  close(): Promise<void>;
}

/** Every deployment id of the configuration, once each. */
export function deploymentIds(config: Config): string[] {
  return [...new Set(config.models.flatMap((m) => modelDeployments(m).map((d) => d.id)))];
}

export async function startRouting(
  config: Config,
  deps: { db: Kysely<Database>; metrics: Metrics; logger: Logger; instanceId: string },
): Promise<Routing> {
  const { metrics, logger } = deps;
  const settings = {
    failures: config.routing.cooldown.failures,
    windowMs: config.routing.cooldown.window_s * 1000,
    ms: config.routing.cooldown.seconds * 1000,
  };
  const onCoolDown: CooldownListener = (deployment, cooldown) => {
    metrics.deploymentCooldowns.inc({ deployment, reason: cooldown.reason });
    logger.warn(
      { deployment, reason: cooldown.reason, until: new Date(cooldown.until).toISOString() },
      "deployment cooling down",
    );
  };
  let cooldowns: CooldownStore;
  if (config.store.redis_url) {
    const shared = new RedisCooldowns({
      url: config.store.redis_url,
      prefix: config.store.redis_prefix,
      settings,
      onCoolDown,
      onError: warnUnlessUnreachable(logger, "Redis: cooldowns follow this instance's own view meanwhile"),
    });
    await shared.start();
    cooldowns = shared;
  } else cooldowns = new MemoryCooldowns(settings, onCoolDown);
  const traffic = new Traffic();
  const routerFor = (routing: RoutingConfig) =>
    new Router({ settings: routing, cooldowns, traffic, metrics });
  const router = routerFor(config.routing);
  const health = new HealthView(deploymentIds(config), cooldowns, traffic);
  metrics.watchDeployments(() => health.gauges());
  const publisher = new HealthPublisher(deps.db, health, {
    instanceId: deps.instanceId,
    onError: warnUnlessUnreachable(logger, "could not publish deployment health"),
  });
  return {
    router,
    cooldowns,
    health,
    publisher,
    routerFor,
    async close() {
      await publisher.stop().catch((err) => logger.warn({ err }, "could not clear deployment health"));
      await cooldowns.close();
    },
  };
}
