// Live figures for `accounts show` and `keys show`: what running gateways hold right now.
import { readLive } from "../ledger/live-usage.ts";
import { formatReset, type RateState } from "../rate-limits/rate-limiter.ts";
import type { Store } from "../store/db.ts";

/**
 * What calls in flight hold and the rate windows. On PostgreSQL the holds of every instance
 * are in the store (ledger_reservations, whether the ledger is PostgreSQL's or Redis's): exact
 * and current. On SQLite (one process) they are what that process last published.
 */
export async function liveView(store: Store, subject: `key:${string}` | `account:${string}`) {
  const live = await readLive(store.db, subject);
  if (store.dialect !== "postgres")
    return { reserved_tokens: live.reserved_tokens, rate_windows: live.windows };
  const [kind, id] = subject.split(":") as ["key" | "account", string];
  const row = await store.db
    .selectFrom("ledger_reservations")
    .select((eb) => eb.fn.sum<number>("tokens").as("tokens"))
    .where(kind === "key" ? "key_id" : "account_id", "=", id)
    .executeTakeFirst();
  return { reserved_tokens: Number(row?.tokens ?? 0), rate_windows: live.windows };
}

/** "rpm 58/60 (full in 2s), tpm 1000/1000" for the human output */
export function describeWindows(
  windows: RateState,
  limits: { rpm?: number | undefined; tpm?: number | undefined },
) {
  const part = (name: string, kind: "requests" | "tokens", limit: number | undefined) => {
    if (limit === undefined) return `${name} unlimited`;
    const w = windows[kind];
    if (!w || w.remaining >= w.limit) return `${name} ${limit}/${limit}`;
    return `${name} ${w.remaining}/${w.limit} (full in ${formatReset(w.resetMs)})`;
  };
  return `${part("rpm", "requests", limits.rpm)}, ${part("tpm", "tokens", limits.tpm)}`;
}
