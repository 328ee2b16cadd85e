// Local token counts off the event loop. Counting on the gateway's own thread stalled every
// call in flight: the tokenizer's first load took 0.2-0.4 s (0.8 s under load; 0.13 s since
// src/tokens/o200k.ts), and one coding agent's 240K-token prompt 0.15-0.25 s to count, paid
// at each call it cancels (an estimate) and at each /v1/messages/count_tokens. A worker
// thread counts instead; it starts on the first count and stops after a while without one,
// so a gateway whose upstreams report usage never holds the thread's memory (about 45 MB of
// RSS, 18 MB of it heap) for long.
//
// The one thread is shared, so it is shared fairly: counts wait in a queue of one lane per
// account, the lanes take turns of SLICE_MS each (round robin), and a lane holds at most
// `counting.queue_per_account` counts, the queue `counting.queue_total`. A count whose
// caller left (its signal aborted) is dropped, queued or between two of its turns; a turn
// ends within a segment of text (src/tokens/count.ts, SEGMENT_CHARS) after SLICE_MS.
import { Worker } from "node:worker_threads";
import { GatewayError } from "../errors/index.ts";
import { advance, boundJob, type Counted, type CountJob, countJob, countSteps } from "./count.ts";

/** What the gateway asks of its counting thread: a turn of a job's count, or to forget a job. */
export type CountRequest = { id: number; job?: CountJob; ms: number } | { id: number; drop: true };
/** A turn's end: the job's counts, `more` when it needs another turn, or why it failed. */
export type CountReply = { id: number } & (Counted | { more: true } | { error: string });

/** An idle worker is stopped after this long: estimates come in bursts (a client cancelling many calls). */
const IDLE_MS = 60_000;
/** A count runs for this long at a turn before the next lane's takes its turn. */
export const SLICE_MS = 10;

export interface CountLimits {
  /** counts one account may have queued or running */
  perAccount: number;
  /** counts queued or running in all */
  total: number;
}

/** `counting` in the configuration (src/config/schema.ts) */
export const DEFAULT_COUNT_LIMITS: Readonly<CountLimits> = { perAccount: 8, total: 64 };

export interface CountOptions {
  /**
   * whose count: lanes take turns by account. None: the lane of counts that name no account
   * (the demo model's usage), bounded by the total only
   */
  account?: string | null | undefined;
  /** the caller's: when it aborts, the count is dropped and its promise rejects with the reason */
  signal?: AbortSignal | undefined;
}

interface Entry {
  id: number;
  job: CountJob;
  lane: string;
  resolve(counted: Counted): void;
  reject(err: unknown): void;
  signal?: AbortSignal | undefined;
  onAbort?: (() => void) | undefined;
  /** the worker holds this count's progress */
  started: boolean;
  /** this count's progress when counted on this thread (a job the worker cannot be sent, or no worker) */
  steps?: Generator<void, Counted, undefined> | undefined;
  /** its caller left, or the queue was closed: nobody waits for it */
  gone: boolean;
}

export class TokenEstimator {
  readonly #idleMs: number;
  readonly #script: URL;
  #limits: CountLimits;
  #worker: Worker | undefined;
  #idle: NodeJS.Timeout | undefined;
  /** the lanes with counts, in turn order: the first takes the next turn, then goes last */
  readonly #lanes = new Map<string, Entry[]>();
  #queued = 0;
  /** the count whose turn is running */
  #busy: Entry | undefined;
  #nextId = 0;
  /** a worker failed to start or died: count on this thread from then on, by turns, rather than lose counts */
  #here = false;

  constructor(options: { idleMs?: number; script?: URL; limits?: CountLimits } = {}) {
    this.#idleMs = options.idleMs ?? IDLE_MS;
    // beside this module, in TypeScript in a clone and compiled in the package (dist/*.js)
    this.#script =
      options.script ??
      new URL(`./count-worker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);
    this.#limits = { ...(options.limits ?? DEFAULT_COUNT_LIMITS) };
  }

  /** The queue's bounds from now on (the gateway's `counting` settings); counts queued stay. */
  configure(limits: CountLimits): void {
    this.#limits = { ...limits };
  }

  /** whether a worker is running (it stops when idle) */
  get running(): boolean {
    return this.#worker !== undefined;
  }

  /** counts queued or running */
  get queued(): number {
    return this.#queued;
  }

  /**
   * An estimate of a call's usage: never refused. When the account's lane or the queue is
   * full it is the counts' upper bound from UTF-8 bytes (boundJob), made at once; a record's
   * estimate is capped at the call's reservation as every estimate is.
   */
  count(job: CountJob, options: CountOptions = {}): Promise<Counted> {
    return this.#enqueue(job, options, () => Promise.resolve(boundJob(job)));
  }

  /**
   * A count a client asked for (count_tokens), refused when the account's lane or the queue
   * is full: 429 `count_queue_full` or 503 `count_queue_busy`, both with `retry-after`.
   */
  countOrRefuse(job: CountJob, options: CountOptions = {}): Promise<Counted> {
    return this.#enqueue(job, options, (full) =>
      Promise.reject(new GatewayError(full === "account" ? "count_queue_full" : "count_queue_busy")),
    );
  }

  /** Stops the worker; the counts still owed are made on this thread, at once. */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#forgetWorker();
    this.#busy = undefined;
    for (const entry of [...this.#lanes.values()].flat()) {
      this.#remove(entry);
      try {
        entry.resolve(countJob(entry.job));
      } catch (err) {
        entry.reject(err);
      }
    }
    if (worker) await worker.terminate();
  }

  #enqueue(
    job: CountJob,
    { account, signal }: CountOptions,
    whenFull: (full: "account" | "total") => Promise<Counted>,
  ): Promise<Counted> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const lane = account ?? "";
    const queue = this.#lanes.get(lane);
    // counts that name no account share a lane the total alone bounds: it is nobody's share
    if (lane && (queue?.length ?? 0) >= this.#limits.perAccount) return whenFull("account");
    if (this.#queued >= this.#limits.total) return whenFull("total");
    return new Promise<Counted>((resolve, reject) => {
      const entry: Entry = { id: ++this.#nextId, job, lane, resolve, reject, started: false, gone: false };
      if (signal) {
        entry.signal = signal;
        entry.onAbort = () => this.#abandon(entry, signal.reason);
        signal.addEventListener("abort", entry.onAbort, { once: true });
      }
      if (queue) queue.push(entry);
      else this.#lanes.set(lane, [entry]);
      this.#queued++;
      this.#pump();
      this.#holdWorker();
    });
  }

  /** Gives the next lane its turn, unless a turn is running. */
  #pump(): void {
    if (this.#busy || !this.#queued) return;
    const [lane, queue] = this.#lanes.entries().next().value!;
    this.#lanes.delete(lane);
    this.#lanes.set(lane, queue);
    const entry = queue[0]!;
    this.#busy = entry;
    if (entry.steps || this.#here) {
      this.#turnHere(entry);
      return;
    }
    const worker = this.#worker ?? this.#start();
    const request: CountRequest = entry.started
      ? { id: entry.id, ms: SLICE_MS }
      : { id: entry.id, job: entry.job, ms: SLICE_MS };
    try {
      worker.postMessage(request);
      entry.started = true;
    } catch {
      // a value the thread cannot be sent (none of a parsed request's): counted here, by turns
      entry.steps = countSteps(entry.job);
      this.#turnHere(entry);
    }
  }

  /** A turn on this thread, after what the event loop has waiting. */
  #turnHere(entry: Entry): void {
    setImmediate(() => {
      if (this.#busy !== entry) return;
      if (entry.gone) {
        this.#answer({ id: entry.id, more: true });
        return;
      }
      let reply: CountReply;
      try {
        entry.steps ??= countSteps(entry.job);
        const counted = advance(entry.steps, SLICE_MS);
        reply = counted ? { id: entry.id, ...counted } : { id: entry.id, more: true };
      } catch (err) {
        reply = { id: entry.id, error: err instanceof Error ? err.message : String(err) };
      }
      this.#answer(reply);
    });
  }

  #answer(reply: CountReply): void {
    const entry = this.#busy;
    if (!entry || entry.id !== reply.id) return;
    this.#busy = undefined;
    if (entry.gone) {
      // its caller left during the turn: the worker forgets what it counted so far
      if ("more" in reply && !entry.steps)
        this.#worker?.postMessage({ id: entry.id, drop: true } satisfies CountRequest);
    } else if ("error" in reply) {
      this.#remove(entry);
      entry.reject(new Error(`token count failed: ${reply.error}`));
    } else if (!("more" in reply)) {
      this.#remove(entry);
      entry.resolve({ prompt: reply.prompt, completion: reply.completion });
    }
    this.#pump();
    this.#holdWorker();
  }

  /** The caller left: its count is dropped now, or at the end of its running turn. */
  #abandon(entry: Entry, reason: unknown): void {
    if (entry.gone) return;
    this.#remove(entry);
    if (this.#busy !== entry && entry.started && !entry.steps)
      this.#worker?.postMessage({ id: entry.id, drop: true } satisfies CountRequest);
    entry.reject(reason);
    this.#holdWorker();
  }

  #remove(entry: Entry): void {
    entry.gone = true;
    if (entry.onAbort) entry.signal?.removeEventListener("abort", entry.onAbort);
    const queue = this.#lanes.get(entry.lane);
    const at = queue?.indexOf(entry) ?? -1;
    if (at < 0) return;
    queue!.splice(at, 1);
    if (!queue!.length) this.#lanes.delete(entry.lane);
    this.#queued--;
  }

  /**
   * The worker is referenced while it owes a count, so a shutdown waiting on a call's record
   * waits for it too, and idles (then stops) when it owes none.
   */
  #holdWorker(): void {
    if (!this.#worker) return;
    if (this.#queued || this.#busy) this.#worker.ref();
    else {
      this.#worker.unref();
      this.#idle?.refresh();
    }
  }

  #start(): Worker {
    const worker = new Worker(this.#script);
    worker.unref();
    worker.on("message", (reply: CountReply) => this.#answer(reply));
    // Any end but ours (a failed start, a crash) leaves what it owed to this thread, and the
    // counts after it are made here too (by turns), rather than start one failing worker
    // after another. The error itself is not thrown: unhandled, a worker's error event ends
    // the process.
    worker.on("error", () => {});
    worker.on("exit", () => {
      if (this.#worker !== worker) return;
      this.#here = true;
      this.#forgetWorker();
      // what the worker had counted of each job is lost: counted again from the start, here
      for (const queue of this.#lanes.values()) for (const entry of queue) entry.started = false;
      this.#busy = undefined;
      this.#pump();
    });
    this.#worker = worker;
    this.#idle = setTimeout(() => this.#idleCheck(), this.#idleMs);
    this.#idle.unref();
    return worker;
  }

  #idleCheck(): void {
    if (this.#queued || this.#busy) this.#idle?.refresh();
    else void this.close();
  }

  #forgetWorker(): void {
    clearTimeout(this.#idle);
    this.#idle = undefined;
    this.#worker = undefined;
  }
}

/**
 * The process's estimator: one worker serves every count of every gateway in the process
 * (the gateway sets its bounds at start, src/http/routes/v1/index.ts).
 */
export const estimator = new TokenEstimator();
