// Writes call records with group commit: records queued while one commit runs are written
// together in the next, and each write() resolves only once its record is committed. A
// commit is a transaction on SQLite and one statement on PostgreSQL (gateway_commit_calls,
// migration 024: a round trip per statement cost the server more than the rows did). The same
// commit adds each record's tokens to its key's and account's
// consumption counters, so the records of a key always add up to its counter, and to the
// daily aggregates (daily_usage) the console's charts read, which outlive pruned records.
// Each record's cost is added the same way to its key's and account's spending, in total and
// for the month of the commit, so the records' costs add up to the spent figures exactly.
//
// With a journal a write() resolves once the record is in the journal, and the store commits
// every `commitIntervalMs` what was journaled since: one commit for many calls instead of one
// per call. On SQLite the journal is a local file (src/records/journal.ts), replayed at start
// from what a crash left uncommitted. On PostgreSQL with Redis it is in Redis
// (src/records/redis-journal.ts), where the instance that sweeps a dead one's holds commits its
// records first; the batch's holds close once it is committed (StoreHolds.journaled).
import { CompiledQuery, type Kysely, PostgresAdapter } from "kysely";
import type { HoldClosing, StoreHolds } from "../ledger/store-holds.ts";
import type { Reservation } from "../ledger/types.ts";
import { monthOf } from "../prices/period.ts";
import { prepared } from "../store/prepared.ts";
import type { Database } from "../store/schema.ts";
import type { CallRecord } from "./call-record.ts";
import { type DailyDelta, dailyDeltas } from "./daily-usage.ts";
import { compileStatements, type Statements } from "./statements.ts";

/**
 * What the writer needs of its journal (RecordJournal, journal.ts; RedisRecordJournal,
 * redis-journal.ts), declared here so that the journals and the writer do not import each other.
 */
export interface Journal {
  /**
   * whether another instance can commit what it holds once this process is gone: only such a
   * journal can carry the records of shared holds
   */
  readonly shared: boolean;
  /** keeps the record where this process's crash does not lose it; throws or rejects when it cannot */
  append(record: CallRecord, reservation: Reservation | undefined): void | Promise<void>;
  /** before a commit of `batch`: what to pass to remove() once it is committed */
  seal(batch: readonly CallRecord[]): string[];
  remove(sealed: readonly string[]): void | Promise<void>;
  /** a shared journal's: what the gone `instance` journaled and no commit took out yet */
  left?(instance: string): Promise<JournaledRecord[]>;
  /** a shared journal's: those records of `instance` are committed */
  removeLeft?(instance: string, requestIds: readonly string[]): Promise<void>;
}

/** A shared journal's record with the hold it closes: what a sweep needs to commit it as its instance would have. */
export interface JournaledRecord {
  record: CallRecord;
  /** the hold's id and subjects (absent: the call held nothing) */
  hold?: { id: number; accountId: string; keyId: string; session?: string | undefined } | undefined;
}

interface Pending {
  record: CallRecord;
  /** the call's hold, closed with the record when the ledger is shared (StoreHolds) */
  reservation: Reservation | undefined;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** behind a journal that did not take it: its write() waits for its commit, and fails with it */
  unjournaled?: true;
}

const settled = (): void => {};

const MAX_BATCH = 500;
const RETRIES = 3;
/** a journaled batch the store refused waits this long before the next try */
const RETRY_LATER_MS = 1_000;
/** groups per daily_usage upsert; a batch rarely has more (accounts × days × keys × models) */
const UPSERT_ROWS = 100;

const COMMIT_CALLS =
  prepared(`select gateway_commit_calls($1::jsonb, $2::text[], $3::bigint[], $4::text[], $5::bigint[],
  $6::text[], $7::bigint[], $8::text[], $9::bigint[], $10, $11::jsonb, $12::jsonb, $13, $14, $15::jsonb,
  $16::bigint[], $17)`);

/**
 * What a batch adds to counters: tokens and nanodollars per key and per account (each map in id
 * order, so concurrent commits on other instances lock rows in one order), and its daily rows.
 */
interface BatchSums {
  keyTokens: Map<string, number>;
  accountTokens: Map<string, number>;
  keyNanos: Map<string, number>;
  accountNanos: Map<string, number>;
  daily: DailyDelta[];
}

function batchSums(batch: readonly Pending[]): BatchSums {
  const add = (m: Map<string, number>, id: string | null, n: number) => {
    if (id && n) m.set(id, (m.get(id) ?? 0) + n);
  };
  const keyTokens = new Map<string, number>();
  const accountTokens = new Map<string, number>();
  const keyNanos = new Map<string, number>();
  const accountNanos = new Map<string, number>();
  for (const { record } of batch) {
    add(keyTokens, record.key_id, record.total_tokens);
    add(accountTokens, record.account_id, record.total_tokens);
    add(keyNanos, record.key_id, record.cost_nanos);
    add(accountNanos, record.account_id, record.cost_nanos);
  }
  const sorted = (m: Map<string, number>) => new Map([...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    keyTokens: sorted(keyTokens),
    accountTokens: sorted(accountTokens),
    keyNanos: sorted(keyNanos),
    accountNanos: sorted(accountNanos),
    daily: dailyDeltas(batch.map((p) => p.record)),
  };
}

/**
 * What the batch's calls held under a capped session charge to those sessions (shared ledgers:
 * the in-process ledger reads a session's use from its records), in key and session order, as
 * a hold locks them. Calls without a capped session add nothing here.
 */
function sessionCharges(batch: readonly Pending[]) {
  const sessions = new Map<
    string,
    { key_id: string; session_id: string; account_id: string; used_tokens: number; spent_nanos: number }
  >();
  for (const { record, reservation } of batch) {
    if (reservation?.session === undefined || (!record.total_tokens && !record.cost_nanos)) continue;
    const id = `${reservation.keyId} ${reservation.session}`;
    const s = sessions.get(id) ?? {
      key_id: reservation.keyId,
      session_id: reservation.session,
      account_id: reservation.accountId,
      used_tokens: 0,
      spent_nanos: 0,
    };
    s.used_tokens += record.total_tokens;
    s.spent_nanos += record.cost_nanos;
    sessions.set(id, s);
  }
  return [...sessions.values()].sort((a, b) =>
    a.key_id === b.key_id ? (a.session_id < b.session_id ? -1 : 1) : a.key_id < b.key_id ? -1 : 1,
  );
}

/**
 * How long journaled records gather before a commit when `store.records_commit_ms` is unset
 * (decision 0043). On PostgreSQL a commit costs about as much for fifty records as for ten, and
 * the answers do not wait for it: 100 ms. A SQLite commit costs no round trip, and 100 ms
 * transactions kept 50 MB more of malloc's memory after a load: 20.
 */
export function defaultCommitMs(shared: boolean): number {
  return shared ? 100 : 20;
}

export class RecordWriter {
  readonly #db: Kysely<Database>;
  readonly #sql: Statements;
  readonly #onError: (err: unknown, attempt: number) => void;
  readonly #holds: StoreHolds | undefined;
  readonly #now: () => number;
  readonly #journal: Journal | undefined;
  readonly #intervalMs: number;
  /** PostgreSQL: a batch is one statement, not a transaction of round trips */
  readonly #postgres: boolean;
  #queue: Pending[] = [];
  /** behind a journal, after a failed commit: no next try before this time */
  #pausedUntil = 0;
  /** behind a journal: the last commit failed, so the next first skips what the store holds */
  #retrying = false;
  /** committed batches a shared journal did not take out yet */
  #unremoved: string[] = [];
  #flushing: Promise<void> | undefined;
  #scheduled = false;

  /** `holds`: a shared ledger whose holds end in the store with their records */
  constructor(
    db: Kysely<Database>,
    options: {
      onError: (err: unknown, attempt: number) => void;
      holds?: StoreHolds | undefined;
      /** the clock the month of a charge is read from */
      now?: () => number;
      /** journal the records and commit them behind (not with shared holds: those close in the store) */
      journal?: Journal | undefined;
      /** with a journal: how long records gather before a commit */
      commitIntervalMs?: number;
    },
  ) {
    if (options.journal && options.holds && !options.journal.shared)
      throw new Error("a local journal cannot carry shared holds' records");
    this.#postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    if (options.holds && !this.#postgres) throw new Error("shared holds close on PostgreSQL only");
    this.#db = db;
    this.#journal = options.journal;
    this.#intervalMs = options.commitIntervalMs ?? 0;
    this.#now = options.now ?? Date.now;
    this.#sql = compileStatements(db);
    this.#onError = options.onError;
    this.#holds = options.holds;
  }

  /** Queues the record (and the call's hold); resolves when it is committed, rejects if it could not be. */
  write(record: CallRecord, reservation?: Reservation): Promise<void> {
    if (this.#journal) {
      const queue = () => {
        this.#queue.push({ record, reservation, resolve: settled, reject: settled });
        // the hold closes once the record is committed, not when the call ends
        if (reservation) this.#holds?.journaled(reservation);
        this.#schedule();
      };
      // throws (disk full): the caller fails the call, nothing queued
      const appended = this.#journal.append(record, reservation);
      if (!appended) {
        queue();
        return Promise.resolve();
      }
      // Redis did not take it (down): the store still may, and the answer waits for that, as
      // without a journal. A call refused because Redis is down has its record all the same.
      return appended.then(queue, () => this.#unjournaled(record, reservation));
    }
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ record, reservation, resolve, reject });
      this.#schedule();
    });
  }

  /** Queues a record the journal did not take: resolves once it is committed, rejects if it cannot be. */
  #unjournaled(record: CallRecord, reservation: Reservation | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ record, reservation, resolve, reject, unjournaled: true });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#flushing) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      void this.#drain();
    };
    // setImmediate lets every request finishing in this turn of the event loop join the batch;
    // behind a journal, the calls of a whole interval join it.
    if (this.#journal) setTimeout(run, Math.max(this.#intervalMs, this.#pausedUntil - Date.now()));
    else setImmediate(run);
  }

  #drain(): Promise<void> {
    this.#flushing ??= (async () => {
      while (this.#queue.length) {
        if (this.#journal) {
          if (!(await this.#commitJournaled(this.#journal))) return;
          continue;
        }
        const batch = this.#queue.splice(0, MAX_BATCH);
        await this.#commit(batch);
      }
    })().finally(() => {
      this.#flushing = undefined;
      // A write queued after the loop's last look (while the batch's promises resolved)
      // found #flushing still set and did not schedule: pick it up now.
      if (this.#queue.length) this.#schedule();
    });
    return this.#flushing;
  }

  /**
   * Commits everything journaled so far, then removes its segments. A commit that fails puts
   * the records back, keeps the segments, and tries again later: they are never dropped.
   */
  async #commitJournaled(journal: Journal): Promise<boolean> {
    const batch = this.#queue.splice(0);
    const sealed = journal.seal(batch.map((p) => p.record));
    for (let i = 0; i < batch.length; i += MAX_BATCH) {
      let chunk = batch.slice(i, i + MAX_BATCH);
      if (this.#retrying) {
        // The last try may have landed (its answer lost), or a sweep that took this instance
        // for dead committed these records: those are not committed twice, and their holds
        // were closed by the sweep (closing them here again finds nothing to close).
        const present = await this.#present(chunk.map((p) => p.record)).catch(() => undefined);
        if (present?.size) {
          this.#holds?.committed(
            chunk.flatMap((p) => (p.reservation && present.has(p.record.request_id) ? [p.reservation] : [])),
          );
          chunk = chunk.filter((p) => !present.has(p.record.request_id));
        }
      }
      if (!(await this.#commit(chunk))) {
        // the failed chunk's unjournaled writes were rejected: only the journal keeps the rest
        this.#queue.unshift(...chunk.filter((p) => !p.unjournaled), ...batch.slice(i + MAX_BATCH));
        this.#pausedUntil = Date.now() + RETRY_LATER_MS;
        this.#retrying = true;
        return false;
      }
      this.#retrying = false;
    }
    // the batch's holds closed first: a record gone from the journal is one whose hold is closed
    await this.#holds?.closesDone();
    try {
      await journal.remove([...this.#unremoved, ...sealed]);
      this.#unremoved = [];
    } catch (err) {
      // Committed, but still in Redis: taken out with the next batch (a sweep would skip them).
      this.#unremoved.push(...sealed);
      this.#onError(err, 0);
    }
    return true;
  }

  /** The request ids of these records that the store holds already. */
  async #present(records: readonly CallRecord[]): Promise<Set<string>> {
    const present = new Set<string>();
    for (let i = 0; i < records.length; i += MAX_BATCH) {
      const rows = await this.#db
        .selectFrom("call_records")
        .select("request_id")
        .where(
          "request_id",
          "in",
          records.slice(i, i + MAX_BATCH).map((r) => r.request_id),
        )
        .execute();
      for (const r of rows) present.add(r.request_id);
    }
    return present;
  }

  /**
   * Commits what `instance` (gone: its lease ran out) journaled and no commit took out, as it
   * would have: its holds' journal rows marked with their charges, which the sweep then applies.
   * Throws when it could not: the sweep must not release holds whose charges are not committed.
   */
  async commitLeft(instance: string): Promise<number> {
    const journal = this.#journal;
    if (!journal?.left || !journal.removeLeft) return 0;
    const left = await journal.left(instance);
    if (!left.length) return 0;
    const present = await this.#present(left.map((e) => e.record));
    const missing = left.filter((e) => !present.has(e.record.request_id));
    for (let i = 0; i < missing.length; i += MAX_BATCH) {
      const batch = missing.slice(i, i + MAX_BATCH).map(({ record, hold }) => ({
        record,
        reservation: hold && {
          id: hold.id,
          accountId: hold.accountId,
          keyId: hold.keyId,
          tokens: 0,
          nanos: null,
          ...(hold.session === undefined ? {} : { session: hold.session }),
        },
        resolve: settled,
        reject: settled,
      }));
      if (!(await this.#commit(batch, { ledger: "redis", instance, done: [] })))
        throw new Error(`could not commit the records instance ${instance} left`);
    }
    await journal.removeLeft(
      instance,
      left.map((e) => e.record.request_id),
    );
    return missing.length;
  }

  /** Adds records a crashed process journaled and the store does not hold yet; returns how many. */
  async replay(records: readonly CallRecord[]): Promise<number> {
    const present = await this.#present(records);
    const missing = records.filter((r) => !present.has(r.request_id));
    for (let i = 0; i < missing.length; i += MAX_BATCH) {
      const batch = missing.slice(i, i + MAX_BATCH).map((record) => ({
        record,
        reservation: undefined,
        resolve: settled,
        reject: settled,
      }));
      if (!(await this.#commit(batch))) throw new Error("could not replay the call records' journal");
    }
    return missing.length;
  }

  /**
   * Commits the batch (with retries); false when it could not be, its writers rejected.
   * `closing`: another instance's holds (its records, committed by a sweep); else this one's.
   */
  async #commit(batch: Pending[], closing?: HoldClosing): Promise<boolean> {
    if (!batch.length) return true;
    const sums = batchSums(batch);
    for (let attempt = 1; ; attempt++) {
      try {
        const month = monthOf(this.#now());
        if (this.#postgres) await this.#commitStatement(batch, sums, month, closing);
        else await this.#commitTransaction(batch, sums, month);
        if (!closing) this.#holds?.committed(batch.flatMap((p) => (p.reservation ? [p.reservation] : [])));
        for (const p of batch) p.resolve();
        return true;
      } catch (err) {
        this.#onError(err, attempt);
        if (attempt >= RETRIES) {
          for (const p of batch) p.reject(err);
          return false;
        }
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }

  /**
   * SQLite: the batch as a transaction of the compiled statements (no round trips there), the
   * counters charged keys then accounts, each in id order.
   */
  async #commitTransaction(batch: Pending[], sums: BatchSums, month: string): Promise<void> {
    await this.#db.transaction().execute(async (trx) => {
      await trx.executeQuery(this.#sql.insert(batch.map((p) => p.record)));
      for (const [id, tokens] of sums.keyTokens) await trx.executeQuery(this.#sql.addToKey(id, tokens));
      for (const [id, tokens] of sums.accountTokens)
        await trx.executeQuery(this.#sql.addToAccount(id, tokens));
      for (const [id, nanos] of sums.keyNanos)
        await trx.executeQuery(this.#sql.spend("api_keys", id, nanos, month));
      for (const [id, nanos] of sums.accountNanos)
        await trx.executeQuery(this.#sql.spend("accounts", id, nanos, month));
      for (let i = 0; i < sums.daily.length; i += UPSERT_ROWS)
        await trx.executeQuery(this.#sql.addToDaily(sums.daily.slice(i, i + UPSERT_ROWS)));
    });
  }

  /**
   * PostgreSQL: the batch as one statement (gateway_commit_calls, migration 024), which applies
   * the same sums in the same lock order and ends the batch's holds: a transaction of a round
   * trip per statement cost the server more than the rows did.
   */
  async #commitStatement(
    batch: Pending[],
    sums: BatchSums,
    month: string,
    other: HoldClosing | undefined,
  ): Promise<void> {
    const closing: HoldClosing | undefined = other ?? this.#holds?.closing();
    const holds = this.#holds
      ? batch.flatMap(({ reservation: r, record }) =>
          r
            ? [
                {
                  hold: r.id,
                  account_id: r.accountId,
                  key_id: r.keyId,
                  tokens: record.total_tokens,
                  nanos: record.cost_nanos,
                  session_id: r.session ?? null,
                },
              ]
            : [],
        )
      : [];
    const ids = (m: ReadonlyMap<string, number>) => [...m.keys()];
    const values = (m: ReadonlyMap<string, number>) => [...m.values()];
    await this.#db.executeQuery(
      CompiledQuery.raw(COMMIT_CALLS, [
        JSON.stringify(batch.map((p) => p.record)),
        ids(sums.keyTokens),
        values(sums.keyTokens),
        ids(sums.accountTokens),
        values(sums.accountTokens),
        ids(sums.keyNanos),
        values(sums.keyNanos),
        ids(sums.accountNanos),
        values(sums.accountNanos),
        month,
        JSON.stringify(this.#holds ? sessionCharges(batch) : []),
        JSON.stringify(sums.daily),
        closing?.ledger ?? "none",
        closing?.ledger === "redis" ? closing.instance : null,
        JSON.stringify(holds),
        closing?.ledger === "redis" ? closing.done : [],
        this.#now(),
      ]),
    );
  }

  /** Writes everything queued; for shutdown. Behind a journal, gives up once a commit fails (the journal keeps the records). */
  async flush(): Promise<void> {
    while (this.#queue.length || this.#flushing) {
      const before = this.#queue.length;
      await this.#drain();
      if (this.#journal && this.#queue.length >= before && before > 0) break;
    }
    await this.#holds?.closesDone();
  }
}
