// Local token estimates off the event loop. Counting on the gateway's own thread stalled every
// call in flight: the tokenizer's first load took 0.2-0.4 s (0.8 s under load), and one
// coding agent's 240K-token prompt 0.15-0.25 s to count, paid at each call it cancels (an
// estimate) and at each /v1/messages/count_tokens. A worker thread counts instead; it starts
// on the first estimate and stops after a while without one, so a gateway whose upstreams
// report usage never holds the tokenizer's memory (about 75 MB) for long.
import { Worker } from "node:worker_threads";
import { type Counted, type CountJob, countJob } from "./count.ts";

export type CountReply = { id: number } & (Counted | { error: string });

/** An idle worker is stopped after this long: estimates come in bursts (a client cancelling many calls). */
const IDLE_MS = 60_000;

interface Pending {
  job: CountJob;
  resolve(counted: Counted): void;
  reject(err: Error): void;
}

export class TokenEstimator {
  readonly #idleMs: number;
  readonly #script: URL;
  #worker: Worker | undefined;
  #idle: NodeJS.Timeout | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  /** a worker failed to start or died: count on this thread from then on rather than lose estimates */
  #here = false;

  constructor(options: { idleMs?: number; script?: URL } = {}) {
    this.#idleMs = options.idleMs ?? IDLE_MS;
    this.#script = options.script ?? new URL("./count-worker.ts", import.meta.url);
  }

  /** whether a worker is running (it stops when idle) */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  count(job: CountJob): Promise<Counted> {
    if (this.#here) return Promise.resolve().then(() => countJob(job));
    const worker = this.#worker ?? this.#start();
    const id = ++this.#nextId;
    return new Promise<Counted>((resolve, reject) => {
      try {
        worker.postMessage({ id, job });
      } catch {
        // a value the thread cannot be sent (none of a parsed request's): counted here
        resolve(countJob(job));
        return;
      }
      this.#pending.set(id, { job, resolve, reject });
      // Referenced while it owes an answer, so a shutdown waiting on a call's record waits for it too.
      if (this.#pending.size === 1) worker.ref();
    });
  }

  /** Stops the worker; counts still owed are made on this thread. */
  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    this.#stop();
    await worker.terminate();
  }

  #start(): Worker {
    const worker = new Worker(this.#script);
    worker.unref();
    worker.on("message", (reply: CountReply) => this.#answer(reply));
    // Any end but ours (a failed start, a crash) settles what it owed on this thread, and the
    // estimates after it are made here too, rather than start one failing worker after another.
    // The error itself is not thrown: unhandled, a worker's error event ends the process.
    worker.on("error", () => {});
    worker.on("exit", () => {
      if (this.#worker !== worker) return;
      this.#here = true;
      this.#stop();
    });
    this.#worker = worker;
    this.#idle = setTimeout(() => this.#idleCheck(), this.#idleMs);
    this.#idle.unref();
    return worker;
  }

  #idleCheck(): void {
    if (this.#pending.size) this.#idle?.refresh();
    else void this.close();
  }

  #answer(reply: CountReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    this.#pending.delete(reply.id);
    if ("error" in reply) pending.reject(new Error(`token count failed: ${reply.error}`));
    else pending.resolve({ prompt: reply.prompt, completion: reply.completion });
    if (this.#pending.size === 0) {
      this.#worker?.unref();
      this.#idle?.refresh();
    }
  }

  /** Forgets the worker; whatever it still owed is counted on this thread. */
  #stop(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    this.#worker = undefined;
    const owed = [...this.#pending.values()];
    this.#pending.clear();
    for (const { job, resolve, reject } of owed) {
      try {
        resolve(countJob(job));
      } catch (err) {
        reject(err as Error);
      }
    }
  }
}

/** The process's estimator: one worker serves every call. */
export const estimator = new TokenEstimator();
