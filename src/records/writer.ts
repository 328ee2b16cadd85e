// Writes call records with group commit: records queued while one transaction runs are
// written together in the next, and each write() resolves only once its record is
// committed. The same transaction adds each record's tokens to its key's and account's
// consumption counters, so the records of a key always add up to its counter, and to the
// daily aggregates (daily_usage) the console's charts read, which outlive pruned records.
// Each record's cost is added the same way to its key's and account's spending, in total and
// for the month of the commit, so the records' costs add up to the spent figures exactly.
//
// With a journal (SQLite, src/records/journal.ts) a write() resolves once the record is in
// the journal, and the store commits every `commitIntervalMs` what was journaled since: one
// transaction for many calls instead of one per call. The journal replays at start what a
// crash left uncommitted.
import type { Kysely } from "kysely";
import type { StoreHolds } from "../ledger/store-holds.ts";
import type { Reservation } from "../ledger/types.ts";
import { monthOf } from "../prices/period.ts";
import type { Database } from "../store/schema.ts";
import type { CallRecord } from "./call-record.ts";
import { dailyDeltas } from "./daily-usage.ts";
import { compileStatements, type Statements } from "./statements.ts";

/**
 * What the writer needs of its journal (RecordJournal, journal.ts), declared here so that the
 * journal and the writer do not import each other.
 */
export interface Journal {
  append(record: CallRecord): void;
  seal(): string[];
  remove(files: readonly string[]): void;
}

interface Pending {
  record: CallRecord;
  /** the call's hold, closed with the record when the ledger is shared (StoreHolds) */
  reservation: Reservation | undefined;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const settled = (): void => {};

const MAX_BATCH = 500;
const RETRIES = 3;
/** a journaled batch the store refused waits this long before the next try */
const RETRY_LATER_MS = 1_000;
/** groups per daily_usage upsert; a batch rarely has more (accounts × days × keys × models) */
const UPSERT_ROWS = 100;

export class RecordWriter {
  readonly #db: Kysely<Database>;
  readonly #sql: Statements;
  readonly #onError: (err: unknown, attempt: number) => void;
  readonly #holds: StoreHolds | undefined;
  readonly #now: () => number;
  readonly #journal: Journal | undefined;
  readonly #intervalMs: number;
  #queue: Pending[] = [];
  /** behind a journal, after a failed commit: no next try before this time */
  #pausedUntil = 0;
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
    if (options.journal && options.holds) throw new Error("a journal cannot close shared holds");
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
      this.#journal.append(record); // throws (disk full): the caller fails the call, nothing queued
      this.#queue.push({ record, reservation, resolve: settled, reject: settled });
      this.#schedule();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ record, reservation, resolve, reject });
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
    const sealed = journal.seal();
    const batch = this.#queue.splice(0);
    for (let i = 0; i < batch.length; i += MAX_BATCH) {
      if (!(await this.#commit(batch.slice(i, i + MAX_BATCH)))) {
        this.#queue.unshift(...batch.slice(i));
        this.#pausedUntil = Date.now() + RETRY_LATER_MS;
        return false;
      }
    }
    journal.remove(sealed);
    return true;
  }

  /** Adds records a crashed process journaled and the store does not hold yet; returns how many. */
  async replay(records: readonly CallRecord[]): Promise<number> {
    const missing: CallRecord[] = [];
    for (let i = 0; i < records.length; i += MAX_BATCH) {
      const chunk = records.slice(i, i + MAX_BATCH);
      const present = new Set(
        (
          await this.#db
            .selectFrom("call_records")
            .select("request_id")
            .where(
              "request_id",
              "in",
              chunk.map((r) => r.request_id),
            )
            .execute()
        ).map((r) => r.request_id),
      );
      for (const r of chunk) if (!present.has(r.request_id)) missing.push(r);
    }
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

  /** Commits the batch (with retries); false when it could not be, its writers rejected. */
  async #commit(batch: Pending[]): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#db.transaction().execute(async (trx) => {
          await trx.executeQuery(this.#sql.insert(batch.map((p) => p.record)));
          const keys = new Map<string, number>();
          const accounts = new Map<string, number>();
          for (const { record } of batch) {
            if (!record.total_tokens) continue;
            if (record.key_id) keys.set(record.key_id, (keys.get(record.key_id) ?? 0) + record.total_tokens);
            if (record.account_id)
              accounts.set(record.account_id, (accounts.get(record.account_id) ?? 0) + record.total_tokens);
          }
          // in id order, so concurrent transactions (other instances) lock rows in one order
          const charge = async () => {
            for (const id of [...keys.keys()].sort())
              await trx.executeQuery(this.#sql.addToKey(id, keys.get(id)!));
            for (const id of [...accounts.keys()].sort())
              await trx.executeQuery(this.#sql.addToAccount(id, accounts.get(id)!));
          };
          if (this.#holds) {
            const holds = batch.flatMap(({ reservation, record }) =>
              reservation ? [{ reservation, tokens: record.total_tokens, nanos: record.cost_nanos }] : [],
            );
            await this.#holds.closeWithRecords(trx, holds, { keys, accounts }, charge);
          } else await charge();
          await this.#spend(trx, batch);
          if (this.#holds) await this.#chargeSessions(trx, batch);
          const daily = dailyDeltas(batch.map((p) => p.record));
          for (let i = 0; i < daily.length; i += UPSERT_ROWS)
            await trx.executeQuery(this.#sql.addToDaily(daily.slice(i, i + UPSERT_ROWS)));
        });
        this.#holds?.committed(batch.flatMap((p) => (p.reservation ? [p.reservation] : [])));
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

  /** Adds the batch's costs to its keys' and accounts' spending, keys then accounts, each in id order. */
  async #spend(trx: Kysely<Database>, batch: Pending[]): Promise<void> {
    const keys = new Map<string, number>();
    const accounts = new Map<string, number>();
    for (const { record } of batch) {
      if (!record.cost_nanos) continue;
      if (record.key_id) keys.set(record.key_id, (keys.get(record.key_id) ?? 0) + record.cost_nanos);
      if (record.account_id)
        accounts.set(record.account_id, (accounts.get(record.account_id) ?? 0) + record.cost_nanos);
    }
    if (!keys.size && !accounts.size) return;
    const month = monthOf(this.#now());
    for (const id of [...keys.keys()].sort())
      await trx.executeQuery(this.#sql.spend("api_keys", id, keys.get(id)!, month));
    for (const id of [...accounts.keys()].sort())
      await trx.executeQuery(this.#sql.spend("accounts", id, accounts.get(id)!, month));
  }

  /**
   * Adds what the batch's calls held under a capped session charge to those sessions (shared
   * ledgers: the in-process ledger reads a session's use from its records), after the keys and
   * accounts and in key and session order, as a hold locks them. Calls without a capped
   * session add nothing here.
   */
  async #chargeSessions(trx: Kysely<Database>, batch: Pending[]): Promise<void> {
    const sessions = new Map<
      string,
      { key: string; session: string; account: string; tokens: number; nanos: number }
    >();
    for (const { record, reservation } of batch) {
      if (reservation?.session === undefined || (!record.total_tokens && !record.cost_nanos)) continue;
      const id = `${reservation.keyId} ${reservation.session}`;
      const s = sessions.get(id) ?? {
        key: reservation.keyId,
        session: reservation.session,
        account: reservation.accountId,
        tokens: 0,
        nanos: 0,
      };
      s.tokens += record.total_tokens;
      s.nanos += record.cost_nanos;
      sessions.set(id, s);
    }
    if (!sessions.size) return;
    const now = this.#now();
    const rows = [...sessions.values()]
      .sort((a, b) => (a.key === b.key ? (a.session < b.session ? -1 : 1) : a.key < b.key ? -1 : 1))
      .map((s) => ({
        key_id: s.key,
        session_id: s.session,
        account_id: s.account,
        used_tokens: s.tokens,
        spent_nanos: s.nanos,
        created_at: now,
      }));
    await trx
      .insertInto("session_usage")
      .values(rows)
      .onConflict((oc) =>
        oc.columns(["key_id", "session_id"]).doUpdateSet((eb) => ({
          used_tokens: eb("session_usage.used_tokens", "+", eb.ref("excluded.used_tokens")),
          spent_nanos: eb("session_usage.spent_nanos", "+", eb.ref("excluded.spent_nanos")),
        })),
      )
      .execute();
  }

  /** Writes everything queued; for shutdown. Behind a journal, gives up once a commit fails (the journal keeps the records). */
  async flush(): Promise<void> {
    while (this.#queue.length || this.#flushing) {
      const before = this.#queue.length;
      await this.#drain();
      if (this.#journal && this.#queue.length >= before && before > 0) return;
    }
  }
}
