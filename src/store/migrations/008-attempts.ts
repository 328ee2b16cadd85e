import type { Kysely } from "kysely";

// Routing (issue #11): each call record keeps its upstream attempts, and each running
// instance publishes how it sees every deployment, for `gateway deployments`.
export async function up(db: Kysely<any>): Promise<void> {
  // JSON array of {model, provider, upstream_model, outcome, status, ms}; null when the call
  // never reached an upstream. provider and upstream_model keep the deployment that answered.
  await db.schema.alterTable("call_records").addColumn("attempts", "text").execute();
  await db.schema
    .createTable("deployment_health")
    .addColumn("instance_id", "text", (c) => c.notNull())
    /** "provider/upstream_model" */
    .addColumn("deployment", "text", (c) => c.notNull())
    /** counted failures within the cooldown window */
    .addColumn("failures", "integer", (c) => c.notNull())
    /** null: not cooling down */
    .addColumn("cooling_until", "bigint")
    /** failures | rate_limited; null when not cooling down */
    .addColumn("cooldown_reason", "text")
    .addColumn("in_flight", "integer", (c) => c.notNull())
    /** moving average of the time to first byte; null before the first answer */
    .addColumn("latency_ms", "integer")
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("deployment_health_pk", ["instance_id", "deployment"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("deployment_health").execute();
  await db.schema.alterTable("call_records").dropColumn("attempts").execute();
}
