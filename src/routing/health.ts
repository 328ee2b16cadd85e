// Each deployment's health as this instance sees it (failures in the window, cooldown, calls
// in flight, latency), published to the store's deployment_health table about once a second
// like live usage, so `gateway deployments` in another process can show every running
// instance's view. Rows are per instance; readers keep the fresh ones.
import type { Kysely } from "kysely";
import { type PeriodicJob, startPeriodicJob } from "../lib/periodic-job.ts";
import type { Database } from "../store/schema.ts";
import type { CooldownReason, CooldownStore } from "./cooldowns.ts";
import type { Traffic } from "./traffic.ts";

/** rows older than this belong to an instance that stopped; readers ignore them */
export const HEALTH_FRESH_MS = 5_000;

export interface DeploymentHealth {
  deployment: string;
  failures: number;
  /** null: not cooling down (a cooldown that is over but not yet probed still shows) */
  coolingUntil: number | null;
  cooldownReason: CooldownReason | null;
  inFlight: number;
  latencyMs: number | null;
}

export class HealthView {
  #deployments: readonly string[];
  readonly #cooldowns: CooldownStore;
  readonly #traffic: Traffic;

  constructor(deployments: readonly string[], cooldowns: CooldownStore, traffic: Traffic) {
    this.#deployments = deployments;
    this.#cooldowns = cooldowns;
    this.#traffic = traffic;
  }

  /** The deployments to report from now on (a configuration reload added or removed some). */
  follow(deployments: readonly string[]): void {
    this.#deployments = deployments;
  }

  *all(): Iterable<DeploymentHealth> {
    for (const deployment of this.#deployments) {
      const cooldown = this.#cooldowns.get(deployment);
      const latency = this.#traffic.latencyMs(deployment);
      yield {
        deployment,
        failures: this.#cooldowns.failures(deployment),
        coolingUntil: cooldown?.until ?? null,
        cooldownReason: cooldown?.reason ?? null,
        inFlight: this.#traffic.inFlight(deployment),
        latencyMs: latency === undefined ? null : Math.round(latency),
      };
    }
  }

  /** What the metrics' gauges read at each scrape. */
  *gauges(): Iterable<{ id: string; inFlight: number; coolingDown: boolean }> {
    const now = Date.now();
    for (const h of this.all())
      yield {
        id: h.deployment,
        inFlight: h.inFlight,
        coolingDown: h.coolingUntil !== null && h.coolingUntil > now,
      };
  }
}

export class HealthPublisher {
  readonly #db: Kysely<Database>;
  readonly #view: HealthView;
  readonly #instanceId: string;
  readonly #onError: (err: unknown) => void;
  #job: PeriodicJob | undefined;

  constructor(
    db: Kysely<Database>,
    view: HealthView,
    options: { instanceId: string; onError: (err: unknown) => void },
  ) {
    this.#db = db;
    this.#view = view;
    this.#instanceId = options.instanceId;
    this.#onError = options.onError;
  }

  start(intervalMs: number): void {
    this.#job = startPeriodicJob({ intervalMs, run: () => this.publish(), onError: this.#onError });
  }

  async publish(): Promise<void> {
    const now = Date.now();
    const rows = [...this.#view.all()].map((h) => ({
      instance_id: this.#instanceId,
      deployment: h.deployment,
      failures: h.failures,
      cooling_until: h.coolingUntil,
      cooldown_reason: h.cooldownReason,
      in_flight: h.inFlight,
      latency_ms: h.latencyMs,
      updated_at: now,
    }));
    if (!rows.length) return;
    await this.#db
      .insertInto("deployment_health")
      .values(rows)
      .onConflict((oc) =>
        oc.columns(["instance_id", "deployment"]).doUpdateSet((eb) => ({
          failures: eb.ref("excluded.failures"),
          cooling_until: eb.ref("excluded.cooling_until"),
          cooldown_reason: eb.ref("excluded.cooldown_reason"),
          in_flight: eb.ref("excluded.in_flight"),
          latency_ms: eb.ref("excluded.latency_ms"),
          updated_at: eb.ref("excluded.updated_at"),
        })),
      )
      .execute();
  }

  /** Stops publishing and removes this instance's rows. */
  async stop(): Promise<void> {
    await this.#job?.stop();
    await this.#db.deleteFrom("deployment_health").where("instance_id", "=", this.#instanceId).execute();
  }
}

/** Every running instance's fresh view of each deployment. */
export async function readHealth(
  db: Kysely<Database>,
): Promise<Map<string, (DeploymentHealth & { instanceId: string })[]>> {
  const rows = await db
    .selectFrom("deployment_health")
    .selectAll()
    .where("updated_at", ">=", Date.now() - HEALTH_FRESH_MS)
    .orderBy("instance_id")
    .execute();
  const byDeployment = new Map<string, (DeploymentHealth & { instanceId: string })[]>();
  for (const r of rows) {
    const list = byDeployment.get(r.deployment) ?? [];
    list.push({
      instanceId: r.instance_id,
      deployment: r.deployment,
      failures: Number(r.failures),
      coolingUntil: r.cooling_until === null ? null : Number(r.cooling_until),
      cooldownReason: r.cooldown_reason as CooldownReason | null,
      inFlight: Number(r.in_flight),
      latencyMs: r.latency_ms === null ? null : Number(r.latency_ms),
    });
    byDeployment.set(r.deployment, list);
  }
  return byDeployment;
}
