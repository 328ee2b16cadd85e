// The daily aggregates (daily_usage) the console's charts read: a batch's records summed per
// account, UTC day, key and model, added in the batch's transaction so they always equal the
// sums of the committed records, and outlive pruned ones.
import type { CallRecord } from "./call-record.ts";
import { utcDay } from "./days.ts";

/** One daily_usage row's increments, in the upsert's column order. */
export interface DailyDelta {
  account_id: string;
  day: string;
  key_id: string;
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  calls: number;
  cost_nanos: number;
}

export const DAILY_COLUMNS = [
  "account_id",
  "day",
  "key_id",
  "model",
  "prompt_tokens",
  "completion_tokens",
  "total_tokens",
  "calls",
  "cost_nanos",
] as const satisfies readonly (keyof DailyDelta)[];

/**
 * The batch's records summed per account, UTC day, key and model, sorted so that concurrent
 * transactions (other instances on PostgreSQL) lock daily_usage rows in one order and cannot
 * deadlock. Records without an account are not aggregated: no console shows them. Calls
 * naming no known model are summed under the model "".
 */
export function dailyDeltas(records: Iterable<CallRecord>): DailyDelta[] {
  const groups = new Map<string, DailyDelta>();
  for (const r of records) {
    if (!r.account_id) continue;
    const day = utcDay(r.created_at);
    const keyId = r.key_id ?? "";
    // Only models the gateway resolved (an upstream was chosen) get rows of their own: any
    // string a client sends as `model` would otherwise add a row that is kept for a year.
    const model = r.upstream_model === null ? "" : (r.public_model ?? "");
    const id = `${r.account_id}\u0000${day}\u0000${keyId}\u0000${model}`;
    let g = groups.get(id);
    if (!g) {
      g = {
        account_id: r.account_id,
        day,
        key_id: keyId,
        model,
        prompt_tokens: 0,
        completion_tokens: 0,
        total_tokens: 0,
        calls: 0,
        cost_nanos: 0,
      };
      groups.set(id, g);
    }
    g.prompt_tokens += r.prompt_tokens;
    g.completion_tokens += r.completion_tokens;
    g.total_tokens += r.total_tokens;
    g.calls++;
    g.cost_nanos += r.cost_nanos;
  }
  return [...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, g]) => g);
}
