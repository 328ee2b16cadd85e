// After a burst of calls an idle gateway kept what the burst made it: 378-399 MB resident 10 s
// after the bench's load, against 111-150 MB after start-up (decision 0041). V8 frees its heap
// at each collection but keeps the freed pages in a pool (`--trace-gc`: "pooled: 593 MB"
// after a collection that left 20 MB live); its memory reducer, which gives them back, waits
// for the allocation rate to drop, a rate it updates only at collections, which an idle
// process no longer runs (`--trace-memory-reducer` said "high alloc" until the next call). A
// plain full collection (`gc()`) gave nothing back either (291 → 291 MB). The collection a
// low-memory notification runs, which the inspector's HeapProfiler.collectGarbage asks for,
// brought V8's resident pages from 188 to 43 MB.
//
// That collection also drops the compiled code nothing ran during it, so the next calls compile
// and optimise their path again (released after one idle check, the bench's first run after a
// pause cost 976 and 1,186 µs a call against 924 and 910 without: within its noise, but the
// cost is real). So it runs only once the event loop has idled through IDLE_MS, and the process
// grew by GROWTH_BYTES since the last time. It holds the event loop for 40-110 ms, when nothing
// was running. Idle is judged over the whole window, not check by check: on PostgreSQL +
// Redis the gateway's own jobs (live usage, the journal, sweeps) keep an idle loop 1-2 % busy
// with a check at 5-12 % now and then, which reset a check-by-check count often enough that a
// release 40 s after the bench's load did not come (decision 0042).
//
// Start-up is a burst too: compiling the modules, parsing the configuration, migrating the
// store leave garbage and half-empty pages. The same collection once everything is built, before
// the port opens (so no call can wait on it, and nothing has run hot to recompile), brought an
// idle instance from 98 to 92 MB on SQLite and from 104 to 92-94 MB on PostgreSQL + Redis
// (decision 0042): releaseStartUpMemory().
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";

/** How often the event loop's idleness and the process's size are looked at. */
const CHECK_MS = 2_000;
/** How long the event loop must have idled: a pause between bursts is not worth a recompile. */
const IDLE_MS = 30_000;
/** The busiest check an idle window may hold: the gateway's own jobs, not a burst of calls. */
const IDLE_PEAK_UTILIZATION = 0.1;
/** Growth since the last release (or start-up) worth a collection. */
const GROWTH_BYTES = 32 * 1024 * 1024;
/** The event loop's busy share, over the idle window, below which the process counts as idle. */
const IDLE_UTILIZATION = 0.02;

export interface IdleMemoryProbes {
  /** the event loop's busy share since the last call (0 to 1) */
  utilization(): number;
  /** the process's resident memory now, in bytes */
  rss(): number;
  /** runs a memory-reducing collection */
  release(): Promise<void>;
}

/** When to release: what a check decides, given the probes (the tests drive it). */
export class IdleMemoryRelease {
  readonly #probes: IdleMemoryProbes;
  readonly #growth: number;
  readonly #idleChecks: number;
  #baseline: number | undefined;
  /** the event loop's busy share at each of the last `idleChecks` checks */
  readonly #window: number[] = [];
  #releasing = false;

  /** `idleChecks`: the checks an idle window spans */
  constructor(probes: IdleMemoryProbes, options: { growthBytes: number; idleChecks: number }) {
    this.#probes = probes;
    this.#growth = options.growthBytes;
    this.#idleChecks = options.idleChecks;
  }

  /** One check: releases when idle long enough and grown; the sizes before and after, or undefined. */
  async check(): Promise<{ before: number; after: number } | undefined> {
    this.#window.push(this.#probes.utilization());
    if (this.#window.length > this.#idleChecks) this.#window.shift();
    const before = this.#probes.rss();
    this.#baseline ??= before;
    if (!this.#idleWindow() || this.#releasing || before - this.#baseline < this.#growth) return undefined;
    this.#releasing = true;
    try {
      await this.#probes.release();
    } finally {
      this.#releasing = false;
    }
    // what a collection could not give back (fragments, native memory) is the new floor: the
    // next release waits for the process to grow past it again, not for what it cannot return
    const after = this.#probes.rss();
    this.#baseline = after;
    return { before, after };
  }

  /** A whole window of checks, little busy on the whole, none of them busy with calls. */
  #idleWindow(): boolean {
    if (this.#window.length < this.#idleChecks) return false;
    const mean = this.#window.reduce((sum, u) => sum + u, 0) / this.#window.length;
    return mean <= IDLE_UTILIZATION && Math.max(...this.#window) <= IDLE_PEAK_UTILIZATION;
  }
}

/** The probes of this process; undefined where Node has no inspector (a build without it). */
export async function processProbes(): Promise<IdleMemoryProbes | undefined> {
  const inspector = await import("node:inspector").catch(() => undefined);
  if (!inspector) return undefined;
  let last = performance.eventLoopUtilization();
  return {
    utilization() {
      const now = performance.eventLoopUtilization();
      const { utilization } = performance.eventLoopUtilization(now, last);
      last = now;
      return utilization;
    },
    rss: () => process.memoryUsage.rss(),
    release() {
      const session = new inspector.Session();
      session.connect();
      return new Promise<void>((resolve, reject) => {
        session.post("HeapProfiler.collectGarbage", (err) => {
          // not from within its own callback: there, disconnect() never returned (Node 24)
          setImmediate(() => session.disconnect());
          if (err) reject(err);
          else resolve();
        });
      });
    },
  };
}

/**
 * The collection of what start-up left, run by serve once the gateway is built and before it
 * listens (src/server.ts, `beforeListen`).
 */
export async function releaseStartUpMemory(logger: Logger): Promise<void> {
  const probes = await processProbes();
  if (!probes) return;
  // a turn of the event loop first: what start-up drops on its next turn (the price table,
  // src/prices/table.ts) is then garbage too
  await new Promise((resolve) => setImmediate(resolve));
  const started = performance.now();
  const before = probes.rss();
  try {
    await probes.release();
  } catch (err) {
    logger.warn({ err }, "could not release start-up's memory");
    return;
  }
  logReleased(logger, "started: memory released", { before, after: probes.rss() }, started);
}

/** One debug line per release, in MiB as the bench reports memory. */
function logReleased(
  logger: Logger,
  message: string,
  sizes: { before: number; after: number },
  started: number,
): void {
  logger.debug(
    {
      before_mb: Math.round(sizes.before / 2 ** 20),
      after_mb: Math.round(sizes.after / 2 ** 20),
      ms: Math.round(performance.now() - started),
    },
    message,
  );
}

/** Releases this process's memory when it idles after having grown; stop() ends the checks. */
export async function releaseMemoryWhenIdle(logger: Logger): Promise<{ stop(): void }> {
  const probes = await processProbes();
  if (!probes) return { stop() {} };
  const policy = new IdleMemoryRelease(probes, {
    growthBytes: GROWTH_BYTES,
    idleChecks: Math.ceil(IDLE_MS / CHECK_MS),
  });
  const timer = setInterval(() => {
    const started = performance.now();
    policy.check().then(
      (released) => released && logReleased(logger, "idle: memory released", released, started),
      (err) => logger.warn({ err }, "could not release memory while idle"),
    );
  }, CHECK_MS).unref();
  return { stop: () => clearInterval(timer) };
}
