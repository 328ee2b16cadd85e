// The record writer's statements, compiled once per store: a batch's records in one insert, its
// charges to keys' and accounts' counters and spending, and its daily aggregates in multi-row
// upserts, each a compiled text reused with fresh parameters.
import { CompiledQuery, type Kysely, sql } from "kysely";
import type { Database } from "../store/schema.ts";
import type { CallRecord } from "./call-record.ts";
import { DAILY_COLUMNS, type DailyDelta } from "./daily-usage.ts";

/** Column order of the compiled insert; every CallRecord field, once. */
const COLUMNS = [
  "request_id",
  "created_at",
  "api",
  "account_id",
  "key_id",
  "public_model",
  "upstream_model",
  "provider",
  "params",
  "stream",
  "status",
  "http_status",
  "error_code",
  "prompt_tokens",
  "completion_tokens",
  "total_tokens",
  "uncharged_tokens",
  "cached_tokens",
  "cache_write_tokens",
  "reasoning_tokens",
  "reserved_tokens",
  "overrun_tokens",
  "usage_source",
  "latency_ms",
  "ttft_ms",
  "safety_mode",
  "safety_verdict",
  "safety_categories",
  "safety_ms",
  "attempts",
  "cost_nanos",
  "uncharged_cost_nanos",
  "cost_source",
  "session_id",
  "session_client",
] as const satisfies readonly (keyof CallRecord)[];

/** A multi-row statement's SQL, which depends only on its row count: compiled once per count, on first use. */
function byRowCount(compile: (rows: number) => string): (rows: number) => string {
  const texts = new Map<number, string>();
  return (rows) => {
    let text = texts.get(rows);
    if (text === undefined) {
      text = compile(rows);
      texts.set(rows, text);
    }
    return text;
  };
}

/**
 * The writer's statements, compiled once by Kysely for the store's dialect and reused
 * with fresh parameters: building and compiling them per batch cost more than SQLite's own
 * work (about 110 of 190 µs for a one-record transaction).
 */
export function compileStatements(db: Kysely<Database>) {
  // A batch's records in one insert, never compiled per batch: Kysely building and compiling
  // every batch's values was 6 KB of garbage and about 8 µs of CPU per record.
  const sample = Object.fromEntries(COLUMNS.map((c) => [c, null])) as unknown as CallRecord;
  const insertText = byRowCount(
    (rows) =>
      db
        .insertInto("call_records")
        .values(Array.from({ length: rows }, () => sample))
        .compile().sql,
  );
  const counter = (table: "api_keys" | "accounts") =>
    db
      .updateTable(table)
      .set((eb) => ({ used_tokens: eb("used_tokens", "+", 0) }))
      .where("id", "=", "")
      .compile().sql;
  const addToKey = counter("api_keys");
  const addToAccount = counter("accounts");
  // The month figure restarts with the first charge of a new month (of the writer's clock).
  // Parameters: nanos, month, nanos, nanos, month, id.
  const spend = (table: "api_keys" | "accounts") =>
    db
      .updateTable(table)
      .set((eb) => ({
        spent_nanos: eb("spent_nanos", "+", 0),
        month_spent_nanos: sql<number>`case when spent_month = ${""} then month_spent_nanos + ${0} else ${0} end`,
        spent_month: "",
      }))
      .where("id", "=", "")
      .compile().sql;
  const spendSql = {
    api_keys: spend("api_keys"),
    accounts: spend("accounts"),
  };
  // One multi-row upsert per slice of groups (the writer sends at most UPSERT_ROWS at a time).
  const sampleDelta = Object.fromEntries(DAILY_COLUMNS.map((c) => [c, null])) as unknown as DailyDelta;
  const upsertText = byRowCount(
    (rows) =>
      db
        .insertInto("daily_usage")
        .values(Array.from({ length: rows }, () => sampleDelta))
        .onConflict((oc) =>
          oc.columns(["account_id", "day", "key_id", "model"]).doUpdateSet((eb) => ({
            prompt_tokens: eb("daily_usage.prompt_tokens", "+", eb.ref("excluded.prompt_tokens")),
            completion_tokens: eb("daily_usage.completion_tokens", "+", eb.ref("excluded.completion_tokens")),
            total_tokens: eb("daily_usage.total_tokens", "+", eb.ref("excluded.total_tokens")),
            calls: eb("daily_usage.calls", "+", eb.ref("excluded.calls")),
            cost_nanos: eb("daily_usage.cost_nanos", "+", eb.ref("excluded.cost_nanos")),
          })),
        )
        .compile().sql,
  );
  return {
    insert: (records: readonly CallRecord[]) => {
      const values: unknown[] = [];
      // a journal written before a column existed lacks it: null, as the column's default
      for (const r of records) for (const c of COLUMNS) values.push(r[c] ?? null);
      return CompiledQuery.raw(insertText(records.length), values);
    },
    addToKey: (id: string, tokens: number) => CompiledQuery.raw(addToKey, [tokens, id]),
    addToAccount: (id: string, tokens: number) => CompiledQuery.raw(addToAccount, [tokens, id]),
    spend: (table: "api_keys" | "accounts", id: string, nanos: number, month: string) =>
      CompiledQuery.raw(spendSql[table], [nanos, month, nanos, nanos, month, id]),
    addToDaily: (rows: DailyDelta[]) =>
      CompiledQuery.raw(
        upsertText(rows.length),
        rows.flatMap((r) => DAILY_COLUMNS.map((c) => r[c])),
      ),
  };
}

export type Statements = ReturnType<typeof compileStatements>;
