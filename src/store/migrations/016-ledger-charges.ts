import { type Kysely, PostgresAdapter, sql } from "kysely";

// With Redis, a recorded call's hold ends in two places: in the store, with its record and
// charge (one transaction), then in Redis. An instance that dies between the two left Redis
// short of that charge: the sweep gave the hold back as if nothing had been used, and the key
// could be spent past its limit by that much. The record writer's transaction now also leaves
// the charge here, keyed by the hold, until its instance has closed the hold in Redis; the
// sweep of a dead instance applies what its charges say before it releases its holds.
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`
    create table ledger_charges (
      instance_id text not null,
      hold bigint not null,
      account_id text not null,
      key_id text not null,
      tokens bigint not null,
      nanos bigint not null,
      created_at bigint not null,
      primary key (instance_id, hold)
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) await sql`drop table ledger_charges`.execute(db);
}
