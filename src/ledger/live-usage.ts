// Publishes what this instance holds right now (open reservations, rate windows) to the
// store's live_usage table about once a second, so `accounts show` / `keys show` in another
// process, or another instance, can report live figures. Rows are per instance; readers
// sum the fresh ones.
import type { Kysely } from "kysely";
import { type PeriodicJob, startPeriodicJob } from "../lib/periodic-job.ts";
import type { RateLimits, RateState, RateSubject } from "../rate-limits/rate-limiter.ts";
import type { Database } from "../store/schema.ts";
import type { Ledger } from "./types.ts";

/** rows older than this belong to an instance that stopped; readers ignore them */
const LIVE_FRESH_MS = 5_000;

export class LiveUsagePublisher {
  readonly #db: Kysely<Database>;
  readonly #ledger: Ledger;
  readonly #rates: RateLimits;
  readonly #instanceId: string;
  readonly #onError: (err: unknown) => void;
  /** subjects last published as busy (something reserved or a window not full): publish again */
  #busy = new Map<string, RateSubject>();
  #job: PeriodicJob | undefined;

  constructor(
    db: Kysely<Database>,
    ledger: Ledger,
    rates: RateLimits,
    options: { instanceId: string; onError: (err: unknown) => void },
  ) {
    this.#db = db;
    this.#ledger = ledger;
    this.#rates = rates;
    this.#instanceId = options.instanceId;
    this.#onError = options.onError;
  }

  start(intervalMs: number): void {
    this.#job = startPeriodicJob({ intervalMs, run: () => this.publish(), onError: this.#onError });
  }

  async publish(): Promise<void> {
    const subjects = new Map(this.#busy);
    for (const s of this.#rates.drainChanged()) subjects.set(s.id, s);
    if (!subjects.size) return;
    const now = Date.now();
    this.#busy = new Map();
    const rows = [];
    for (const s of subjects.values()) {
      const [kind, id] = s.id.split(":") as ["key" | "account", string];
      const reserved = (kind === "key" ? this.#ledger.key(id) : this.#ledger.account(id))?.reserved ?? 0;
      const windows = await this.#rates.windows(s);
      if (reserved > 0 || !full(windows)) this.#busy.set(s.id, s);
      rows.push({
        instance_id: this.#instanceId,
        subject: s.id,
        reserved_tokens: reserved,
        windows: JSON.stringify(windows),
        updated_at: now,
      });
    }
    await this.#db
      .insertInto("live_usage")
      .values(rows)
      .onConflict((oc) =>
        oc.columns(["instance_id", "subject"]).doUpdateSet((eb) => ({
          reserved_tokens: eb.ref("excluded.reserved_tokens"),
          windows: eb.ref("excluded.windows"),
          updated_at: eb.ref("excluded.updated_at"),
        })),
      )
      .execute();
  }

  /** Stops publishing and removes this instance's rows: it holds nothing any more. */
  async stop(): Promise<void> {
    await this.#job?.stop();
    await this.#db.deleteFrom("live_usage").where("instance_id", "=", this.#instanceId).execute();
  }
}

function full(state: RateState): boolean {
  return Object.values(state).every((w) => w.remaining >= w.limit);
}

interface LiveFigures {
  reserved_tokens: number;
  windows: RateState;
}

/** The live figures of a subject across instances (fresh rows only). */
export async function readLive(db: Kysely<Database>, subject: string): Promise<LiveFigures> {
  const rows = await db
    .selectFrom("live_usage")
    .select(["reserved_tokens", "windows"])
    .where("subject", "=", subject)
    .where("updated_at", ">=", Date.now() - LIVE_FRESH_MS)
    .execute();
  let reserved = 0;
  let windows: RateState = {};
  for (const r of rows) {
    reserved += Number(r.reserved_tokens);
    const w = JSON.parse(r.windows) as RateState;
    // one instance's windows; with several instances each has its own buckets until Redis
    // shares them, and the tighter is what a client meets
    for (const kind of ["requests", "tokens"] as const) {
      const x = w[kind];
      const y = windows[kind];
      if (x && (!y || x.remaining < y.remaining)) windows = { ...windows, [kind]: x };
    }
  }
  return { reserved_tokens: reserved, windows };
}
