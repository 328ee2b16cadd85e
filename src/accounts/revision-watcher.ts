// Polls a revision row of the store and calls back when it changes. This is how a change made
// by the CLI (another process) or another instance reaches a running gateway without a
// restart: the accounts' revision (keys, quotas, budgets) and the catalog's
// (src/catalog/entries.ts). With many instances the same poll works against PostgreSQL.
import type { Kysely } from "kysely";
import { type PeriodicJob, startPeriodicJob } from "../lib/periodic-job.ts";
import type { Database } from "../store/schema.ts";
import { readRevision } from "./revision.ts";

export class RevisionWatcher {
  readonly #db: Kysely<Database>;
  readonly #intervalMs: number;
  readonly #onChange: () => void;
  readonly #onError: (err: unknown) => void;
  readonly #onRead: () => void;
  readonly #read: (db: Kysely<Database>) => Promise<number | undefined>;
  #last: number | undefined = -1;
  #job: PeriodicJob | undefined;

  constructor(
    db: Kysely<Database>,
    options: {
      intervalMs: number;
      onChange: () => void;
      onError: (err: unknown) => void;
      /** after each read that succeeded: the poll is the gateway's heartbeat of the store */
      onRead?: () => void;
      /** the revision watched; default: the accounts' */
      read?: (db: Kysely<Database>) => Promise<number | undefined>;
    },
  ) {
    this.#db = db;
    this.#intervalMs = options.intervalMs;
    this.#onChange = options.onChange;
    this.#onError = options.onError;
    this.#onRead = options.onRead ?? (() => {});
    this.#read = options.read ?? readRevision;
  }

  async start(): Promise<void> {
    this.#last = await this.#read(this.#db);
    this.#job = startPeriodicJob({
      intervalMs: this.#intervalMs,
      run: () => this.check(),
      onError: this.#onError,
    });
  }

  async check(): Promise<void> {
    const now = await this.#read(this.#db);
    this.#onRead();
    if (now !== this.#last) {
      this.#last = now;
      this.#onChange();
    }
  }

  async stop(): Promise<void> {
    await this.#job?.stop();
  }
}
