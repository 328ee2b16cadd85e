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
// was running.
//
// Start-up is a burst too: compiling the modules, parsing the configuration, migrating the
// store leave garbage and half-empty pages. The collection after it brought an idle instance
// from 104 to 92 MB (decision 0042), and costs no recompile, since nothing has run hot yet. So
// the first check releases without the growth or the long idle, if it finds the event loop
// idle; a first check that finds calls running leaves it to the rule above.
import { performance } from "node:perf_hooks";
import type { Logger } from "pino";

/** How often the event loop's idleness and the process's size are looked at. */
const CHECK_MS = 2_000;
/** How long the event loop must have idled: a pause between bursts is not worth a recompile. */
const IDLE_MS = 30_000;
/** Growth since the last release (or start-up) worth a collection. */
const GROWTH_BYTES = 32 * 1024 * 1024;
/** The event loop's busy share over a check below which the process counts as idle. */
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
  /** no check ran yet: the next one follows start-up */
  #first = true;
  /** consecutive checks that found the event loop idle */
  #idle = 0;
  #releasing = false;

  /** `idleChecks`: consecutive idle checks before a release */
  constructor(probes: IdleMemoryProbes, options: { growthBytes: number; idleChecks: number }) {
    this.#probes = probes;
    this.#growth = options.growthBytes;
    this.#idleChecks = options.idleChecks;
  }

  /**
   * One check: releases after start-up, or when idle long enough and grown; the sizes before
   * and after, or undefined.
   */
  async check(): Promise<{ before: number; after: number } | undefined> {
    this.#idle = this.#probes.utilization() > IDLE_UTILIZATION ? 0 : this.#idle + 1;
    const before = this.#probes.rss();
    this.#baseline ??= before;
    const afterStartUp = this.#first && this.#idle > 0;
    this.#first = false;
    const due = afterStartUp || (this.#idle >= this.#idleChecks && before - this.#baseline >= this.#growth);
    if (!due || this.#releasing) return undefined;
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
      (released) => {
        if (!released) return;
        logger.debug(
          {
            before_mb: Math.round(released.before / 2 ** 20),
            after_mb: Math.round(released.after / 2 ** 20),
            ms: Math.round(performance.now() - started),
          },
          "idle: memory released",
        );
      },
      (err) => logger.warn({ err }, "could not release memory while idle"),
    );
  }, CHECK_MS).unref();
  return { stop: () => clearInterval(timer) };
}
