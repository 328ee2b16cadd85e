import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  // A key's own requests and tokens per minute; null: the plan's default applies.
  await db.schema.alterTable("api_keys").addColumn("rpm_limit", "bigint").execute();
  await db.schema.alterTable("api_keys").addColumn("tpm_limit", "bigint").execute();
  // What each running instance holds right now (open reservations, rate windows), written
  // about once a second, so the CLI can show live figures of another process.
  await db.schema
    .createTable("live_usage")
    .addColumn("instance_id", "text", (c) => c.notNull())
    .addColumn("subject", "text", (c) => c.notNull())
    .addColumn("reserved_tokens", "bigint", (c) => c.notNull())
    .addColumn("windows", "text", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("live_usage_pk", ["instance_id", "subject"])
    .execute();
  await db.schema
    .createIndex("live_usage_subject")
    .on("live_usage")
    .columns(["subject", "updated_at"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("live_usage").execute();
  await db.schema.alterTable("api_keys").dropColumn("tpm_limit").execute();
  await db.schema.alterTable("api_keys").dropColumn("rpm_limit").execute();
}
