// Writes the Redis ledger's holds to the store (ledger_reservations) before their calls go
// upstream: when Redis loses its state, a new epoch is seeded with the holds still open (see
// redis-ledger.ts, which also deletes the rows). Not the call records' journal
// (src/records/journal.ts).
import type pg from "pg";
import { PG_APPLICATION, postgresPool } from "../store/drivers.ts";

/** flushes of at most this many rows are sent as prepared statements, one per size */
const PREPARED_ROWS = 16;

/**
 * How long a row waits for others before its flush, unless its call asks for it first
 * (`flushNow`): its call is upstream meanwhile, and only its answer waits for the row. One
 * insert of several rows costs PostgreSQL little more than one of a single row (decision 0043).
 */
const GATHER_MS = 10;

export interface ReservationRow {
  instance_id: string;
  hold: number;
  account_id: string;
  key_id: string;
  tokens: number;
  account_nanos: number;
  key_nanos: number;
  session_id: string | null;
  session_nanos: number;
  created_at: number;
}

/**
 * The rows are written on connections with synchronous_commit off, many rows a statement:
 * they matter only when Redis loses its state, and a PostgreSQL crash at that same moment is
 * the one case a lost row could matter in. A row gathers with the others of GATHER_MS, or
 * goes at once when its call's answer waits for it.
 */
export class ReservationLog {
  readonly #pool: pg.Pool;
  #queue: { row: ReservationRow; done: (err?: unknown) => void }[] = [];
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;

  constructor(url: string) {
    // a dropped connection is replaced by the pool; a row it was writing fails (its call is refused, charged nothing)
    this.#pool = postgresPool(
      {
        connectionString: url,
        max: 2,
        options: "-c synchronous_commit=off",
        application_name: PG_APPLICATION.holds,
      },
      () => {},
    );
  }

  add(row: ReservationRow): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ row, done: (err) => (err ? reject(err) : resolve()) });
      this.#timer ??= setTimeout(() => this.flushNow(), GATHER_MS);
    });
  }

  /** Sends the rows gathered so far now (a call's answer, or a seed, waits for them). */
  flushNow(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#flushing || !this.#queue.length) return;
    this.#flushing = this.#flush().finally(() => {
      this.#flushing = undefined;
      // rows added after the flush's last look: they have waited long enough
      this.flushNow();
    });
  }

  async #flush(): Promise<void> {
    while (this.#queue.length) {
      const batch = this.#queue.splice(0, 500);
      const values: unknown[] = [];
      const rows = batch.map(({ row }, i) => {
        const columns = [
          row.instance_id,
          row.hold,
          row.account_id,
          row.key_id,
          row.tokens,
          row.account_nanos,
          row.key_nanos,
          row.session_id,
          row.session_nanos,
          row.created_at,
        ];
        const b = i * columns.length;
        values.push(...columns);
        return `(${columns.map((_, c) => `$${b + c + 1}`).join(", ")})`;
      });
      try {
        // A row there already was made by the commit of its call's record, which marks it
        // charged (a caller that did not wait for the row before its record): it stays.
        // The usual sizes (a few holds a flush) prepared once per connection: parsing and
        // planning an unnamed insert cost the server as much again as the row (bench/README.md)
        await this.#pool.query({
          ...(batch.length <= PREPARED_ROWS ? { name: `gw_hold_${batch.length}` } : {}),
          text: `insert into ledger_reservations (instance_id, hold, account_id, key_id, tokens, account_nanos, key_nanos, session_id, session_nanos, created_at) values ${rows.join(", ")} on conflict (instance_id, hold) do nothing`,
          values,
        });
        for (const p of batch) p.done();
      } catch (err) {
        for (const p of batch) p.done(err);
      }
    }
  }

  async close(): Promise<void> {
    this.flushNow();
    await this.#flushing;
    await this.#pool.end();
  }
}
