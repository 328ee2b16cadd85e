// Live figures for `accounts show` and `keys show`: what running gateways hold right now.
import type { Kysely } from "kysely";
import { readLive } from "../ledger/live-usage.ts";
import { formatReset, type RateState } from "../ledger/rate-limiter.ts";
import type { Database } from "../store/schema.ts";

export async function liveView(db: Kysely<Database>, subject: string) {
  const live = await readLive(db, subject);
  return { reserved_tokens: live.reserved_tokens, rate_windows: live.windows };
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
