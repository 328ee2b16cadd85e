// Polls the store's revision row and calls back when it changes. This is how a change made
// by the CLI (another process) reaches a running gateway without a restart. With many
// instances the same poll works against PostgreSQL; Redis pub/sub can replace it later.
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
  #last = -1;
  #job: PeriodicJob | undefined;

  constructor(
    db: Kysely<Database>,
    options: {
      intervalMs: number;
      onChange: () => void;
      onError: (err: unknown) => void;
      /** after each read that succeeded: the poll is the gateway's heartbeat of the store */
      onRead?: () => void;
    },
  ) {
    this.#db = db;
    this.#intervalMs = options.intervalMs;
    this.#onChange = options.onChange;
    this.#onError = options.onError;
    this.#onRead = options.onRead ?? (() => {});
  }

  async start(): Promise<void> {
    this.#last = await readRevision(this.#db);
    this.#job = startPeriodicJob({
      intervalMs: this.#intervalMs,
      run: () => this.check(),
      onError: this.#onError,
    });
  }

  async check(): Promise<void> {
    const now = await readRevision(this.#db);
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
