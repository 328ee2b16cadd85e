// Writes call records with group commit: records queued while one transaction runs are
// written together in the next, and each write() resolves only once its record is
// committed. The same transaction adds each record's tokens to its key's and account's
// consumption counters, so the records of a key always add up to its counter.
import { CompiledQuery, type Kysely } from "kysely";
import type { CallRecordsTable, Database } from "../store/schema.ts";

export type CallRecord = CallRecordsTable;

interface Pending {
  record: CallRecord;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const MAX_BATCH = 500;
const RETRIES = 3;

/** Column order of the compiled insert; every CallRecord field, once. */
const COLUMNS = [
  "request_id",
  "created_at",
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
  "usage_source",
  "latency_ms",
  "ttft_ms",
  "safety_mode",
  "safety_verdict",
  "safety_categories",
  "safety_ms",
] as const satisfies readonly (keyof CallRecord)[];

/**
 * The writer's three statements, compiled once by Kysely for the store's dialect and reused
 * with fresh parameters: building and compiling them per batch cost more than SQLite's own
 * work (about 110 of 190 µs for a one-record transaction).
 */
function compileStatements(db: Kysely<Database>) {
  const sample = Object.fromEntries(COLUMNS.map((c) => [c, null])) as unknown as CallRecord;
  const insert = db.insertInto("call_records").values(sample).compile().sql;
  const counter = (table: "api_keys" | "accounts") =>
    db
      .updateTable(table)
      .set((eb) => ({ used_tokens: eb("used_tokens", "+", 0) }))
      .where("id", "=", "")
      .compile().sql;
  const addToKey = counter("api_keys");
  const addToAccount = counter("accounts");
  return {
    insert: (r: CallRecord) =>
      CompiledQuery.raw(
        insert,
        COLUMNS.map((c) => r[c]),
      ),
    addToKey: (id: string, tokens: number) => CompiledQuery.raw(addToKey, [tokens, id]),
    addToAccount: (id: string, tokens: number) => CompiledQuery.raw(addToAccount, [tokens, id]),
  };
}

export class RecordWriter {
  readonly #db: Kysely<Database>;
  readonly #sql: ReturnType<typeof compileStatements>;
  readonly #onError: (err: unknown, attempt: number) => void;
  #queue: Pending[] = [];
  #flushing: Promise<void> | undefined;
  #scheduled = false;

  constructor(db: Kysely<Database>, options: { onError: (err: unknown, attempt: number) => void }) {
    this.#db = db;
    this.#sql = compileStatements(db);
    this.#onError = options.onError;
  }

  /** Queues the record; resolves when it is committed, rejects if it could not be. */
  write(record: CallRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ record, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#flushing) return;
    this.#scheduled = true;
    // setImmediate lets every request finishing in this turn of the event loop join the batch.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#drain();
    });
  }

  #drain(): Promise<void> {
    this.#flushing ??= (async () => {
      while (this.#queue.length) {
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

  async #commit(batch: Pending[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#db.transaction().execute(async (trx) => {
          // One record (the common case below saturation) takes the precompiled insert; a
          // larger batch is one multi-row insert, whose compile cost is shared by its rows.
          if (batch.length === 1) await trx.executeQuery(this.#sql.insert(batch[0]!.record));
          else
            await trx
              .insertInto("call_records")
              .values(batch.map((p) => p.record))
              .execute();
          const keys = new Map<string, number>();
          const accounts = new Map<string, number>();
          for (const { record } of batch) {
            if (!record.total_tokens) continue;
            if (record.key_id) keys.set(record.key_id, (keys.get(record.key_id) ?? 0) + record.total_tokens);
            if (record.account_id)
              accounts.set(record.account_id, (accounts.get(record.account_id) ?? 0) + record.total_tokens);
          }
          for (const [id, tokens] of keys) await trx.executeQuery(this.#sql.addToKey(id, tokens));
          for (const [id, tokens] of accounts) await trx.executeQuery(this.#sql.addToAccount(id, tokens));
        });
        for (const p of batch) p.resolve();
        return;
      } catch (err) {
        this.#onError(err, attempt);
        if (attempt >= RETRIES) {
          for (const p of batch) p.reject(err);
          return;
        }
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }

  /** Writes everything queued; for shutdown. */
  async flush(): Promise<void> {
    while (this.#queue.length || this.#flushing) await this.#drain();
  }
}
