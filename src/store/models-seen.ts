// A model's `created` (spec 2.1) is when the gateway first registered it, kept in the store so
// it does not change with every restart.
import type { Kysely } from "kysely";
import type { Database } from "./schema.ts";

export async function registerModels(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, number>> {
  const now = Date.now();
  if (ids.length)
    await db
      .insertInto("models_seen")
      .values(ids.map((id) => ({ id, created_at: now })))
      .onConflict((oc) => oc.column("id").doNothing())
      .execute();
  const rows = await db.selectFrom("models_seen").selectAll().execute();
  return new Map(rows.map((r) => [r.id, Number(r.created_at)]));
}
