// Record retention (spec 8), enforced in the store by a periodic job, not just by the views.
// Each run deletes:
//   1. records of past UTC days that consumed nothing (total_tokens = 0): they belong to the
//      Today view only;
//   2. records older than `days` UTC days;
//   3. per account, consumption records of past days beyond the account's newest
//      `records_kept` consumption records (today's count towards them but are never deleted).
//   4. daily_usage rows of days older than `days` UTC days (the charts show no further back).
// The same run deletes the Responses API's stored responses older than `responses_days`.
// Today's records are all kept until the day ends. Within `days`, daily_usage outlives the
// records: the charts keep the days whose records were pruned. Deletes run in chunks of CHUNK rows, each its own statement, with a
// turn of the event loop between them, so SQLite's single writer (the record writer) is never
// held up for long. Several instances may each run it: every delete is idempotent.
import { type Kysely, type SqlBool, sql } from "kysely";
import type { Logger } from "pino";
import { pruneStoredResponses } from "../apis/responses/stored.ts";
import { startOfUtcDay, utcDay, windowStart } from "../records/days.ts";
import type { Database } from "../store/schema.ts";

type Db = Kysely<Database>;

export interface RetentionSettings {
  enabled: boolean;
  interval_minutes: number;
  records_kept: number;
  days: number;
  /** stored responses of the Responses API (src/apis/responses/stored.ts) */
  responses_days: number;
}

export interface RetentionCounts {
  /** past days' records that consumed nothing */
  no_consumption: number;
  /** consumption records older than `days` */
  expired: number;
  /** consumption records of past days beyond an account's newest `records_kept` */
  beyond_kept: number;
  /** daily_usage rows of days older than `days` */
  daily_rows: number;
}

/**
 * Rows per delete. On SQLite a delete blocks the event loop (about 60 µs a row across the
 * indexes on the console benchmark's million records): 200 keeps each stall near 12 ms.
 */
const CHUNK = 200;
/** the first run waits this long after start, so starting stays quick */
const FIRST_RUN_DELAY_MS = 60_000;

// Stated literally, not as parameters, so both planners use the partial indexes of
// migration 005 whose conditions these are.
const consumed = sql<SqlBool>`total_tokens > 0`;
const consumedNothing = sql<SqlBool>`total_tokens = 0`;

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Deletes, CHUNK rows at a time, the rows `select` picks (a query of request ids with a
 * limit); returns how many. Stops early when `stopped()` says so.
 */
async function deleteInChunks(
  db: Db,
  select: (limit: number) => any,
  stopped: () => boolean,
): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await db.deleteFrom("call_records").where("request_id", "in", select(CHUNK)).executeTakeFirst();
    const n = Number(r.numDeletedRows);
    total += n;
    if (n < CHUNK || stopped()) return total;
    await yieldTurn();
  }
}

/** One retention run; `now` is for tests. */
export async function pruneRecords(
  db: Db,
  settings: Pick<RetentionSettings, "records_kept" | "days">,
  now = Date.now(),
  stopped: () => boolean = () => false,
): Promise<RetentionCounts> {
  const today = startOfUtcDay(now);
  const cutoff = windowStart(now, settings.days);
  const counts: RetentionCounts = { no_consumption: 0, expired: 0, beyond_kept: 0, daily_rows: 0 };

  counts.no_consumption = await deleteInChunks(
    db,
    (limit) =>
      db
        .selectFrom("call_records")
        .select("request_id")
        .where(consumedNothing)
        .where("created_at", "<", today)
        .limit(limit),
    stopped,
  );

  // Consumption records are always charged to an account; each account's are pruned
  // through the partial index (account_id, created_at, request_id).
  const accounts = await db.selectFrom("accounts").select("id").orderBy("id").execute();
  for (const { id } of accounts) {
    if (stopped()) break;
    counts.expired += await deleteInChunks(
      db,
      (limit) =>
        db
          .selectFrom("call_records")
          .select("request_id")
          .where("account_id", "=", id)
          .where(consumed)
          .where("created_at", "<", cutoff)
          .limit(limit),
      stopped,
    );
    const boundary = await db
      .selectFrom("call_records")
      .select(["created_at", "request_id"])
      .where("account_id", "=", id)
      .where(consumed)
      .orderBy("created_at", "desc")
      .orderBy("request_id", "desc")
      .limit(1)
      .offset(settings.records_kept - 1)
      .executeTakeFirst();
    if (!boundary) continue;
    const b = { created_at: Number(boundary.created_at), request_id: boundary.request_id };
    counts.beyond_kept += await deleteInChunks(
      db,
      (limit) =>
        db
          .selectFrom("call_records")
          .select("request_id")
          .where("account_id", "=", id)
          .where(consumed)
          .where("created_at", "<", today)
          .where("created_at", "<=", b.created_at)
          .where((eb) =>
            eb(eb.refTuple("created_at", "request_id"), "<", eb.tuple(b.created_at, b.request_id)),
          )
          .limit(limit),
      stopped,
    );
  }
  if (!stopped()) {
    const r = await db.deleteFrom("daily_usage").where("day", "<", utcDay(cutoff)).executeTakeFirst();
    counts.daily_rows = Number(r.numDeletedRows);
  }
  return counts;
}

/** Runs pruneRecords every `interval_minutes`, the first time a minute after start. */
export class RetentionJob {
  readonly #db: Db;
  readonly #settings: RetentionSettings;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;

  constructor(db: Db, settings: RetentionSettings, logger: Logger) {
    this.#db = db;
    this.#settings = settings;
    this.#logger = logger;
  }

  start(): void {
    if (!this.#settings.enabled) return;
    this.#schedule(Math.min(FIRST_RUN_DELAY_MS, this.#settings.interval_minutes * 60_000));
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.run().finally(() => {
        this.#running = undefined;
        this.#schedule(this.#settings.interval_minutes * 60_000);
      });
    }, ms);
    this.#timer.unref();
  }

  /**
   * One run, logged as one line with its counts; failures are logged, never thrown. Stored
   * responses expire in the same run: one job prunes the store.
   */
  async run(): Promise<(RetentionCounts & { stored_responses: number }) | undefined> {
    const started = performance.now();
    try {
      const now = Date.now();
      const stopped = () => this.#stopped;
      const counts = {
        ...(await pruneRecords(this.#db, this.#settings, now, stopped)),
        stored_responses: await pruneStoredResponses(this.#db, this.#settings.responses_days, now, stopped),
      };
      this.#logger.info(
        { retention: counts, ms: Math.round(performance.now() - started) },
        "record retention run",
      );
      return counts;
    } catch (err) {
      this.#logger.warn({ err }, "record retention run failed; the next run tries again");
      return undefined;
    }
  }

  /** Stops scheduling and waits for a run in progress, which ends at its next chunk. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }
}
