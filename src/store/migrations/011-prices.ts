import type { Kysely } from "kysely";

// Money (issue #18), in integer nanodollars (1e-9 USD) so sums are exact. Accounts and keys:
// an optional budget with its period ("none" | "month"), what was spent in total and in the
// month `spent_month` ("YYYY-MM", UTC) — kept both ways so a budget's period can change
// without losing what was spent — and what calls in flight hold. Records: the cost charged,
// the cost not charged (the gateway's own faults, or beyond what a budget held), and where
// the prices came from ("config" | "table" | "unpriced"). Daily aggregates: the cost.
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ["accounts", "api_keys"]) {
    await db.schema.alterTable(table).addColumn("budget_nanos", "bigint").execute();
    await db.schema
      .alterTable(table)
      .addColumn("budget_period", "text", (c) => c.notNull().defaultTo("none"))
      .execute();
    for (const column of ["spent_nanos", "month_spent_nanos", "reserved_nanos"])
      await db.schema
        .alterTable(table)
        .addColumn(column, "bigint", (c) => c.notNull().defaultTo(0))
        .execute();
    await db.schema
      .alterTable(table)
      .addColumn("spent_month", "text", (c) => c.notNull().defaultTo(""))
      .execute();
  }
  for (const column of ["cost_nanos", "uncharged_cost_nanos"])
    await db.schema
      .alterTable("call_records")
      .addColumn(column, "bigint", (c) => c.notNull().defaultTo(0))
      .execute();
  await db.schema.alterTable("call_records").addColumn("cost_source", "text").execute();
  await db.schema
    .alterTable("daily_usage")
    .addColumn("cost_nanos", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("daily_usage").dropColumn("cost_nanos").execute();
  for (const column of ["cost_source", "uncharged_cost_nanos", "cost_nanos"])
    await db.schema.alterTable("call_records").dropColumn(column).execute();
  for (const table of ["api_keys", "accounts"])
    for (const column of [
      "spent_month",
      "reserved_nanos",
      "month_spent_nanos",
      "spent_nanos",
      "budget_period",
      "budget_nanos",
    ])
      await db.schema.alterTable(table).dropColumn(column).execute();
}
