// The load generator: one autocannon run in its own process, so its CPU never competes inside
// the orchestrator's event loop and its cost is not billed to a measured server.
//   node bench/load.ts '<LoadSpec as JSON>'
// prints one line: the LoadResult as JSON.
//
// Latency percentiles come from each response's own timing (process.hrtime, fractional ms),
// not from autocannon's histogram, which stores whole milliseconds: too coarse to see a
// gateway that adds half a millisecond.
import type { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import type { LatencySummary, LoadResult, LoadSpec } from "./types.ts";

/** The part of autocannon's result this script reads. */
interface AutocannonResult {
  errors: number;
  timeouts: number;
  non2xx: number;
  duration: number;
  statusCodeStats: Record<string, { count: number }>;
}

type Autocannon = (
  options: Record<string, unknown>,
  done: (err: Error | null, result: AutocannonResult) => void,
) => EventEmitter;

// autocannon ships CommonJS without type declarations; createRequire keeps the typing local.
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

function summarise(samples: number[]): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  const sum = samples.reduce((a, b) => a + b, 0);
  return {
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : 0,
    mean: samples.length ? sum / samples.length : 0,
  };
}

/** Everything the responses of one load run add up to, over all its autocannon instances. */
class Tally {
  readonly latencies: number[] = [];
  readonly firstBytes: number[] = [];
  responses = 0;
  /** responses within each paced instance's own duration (see paced) */
  inWindow = 0;
  bytes = 0;
  errors = 0;
  timeouts = 0;
  non2xx = 0;
  durationS = 0;
  readonly statusCodes: Record<string, number> = {};

  onResponse = (_client: unknown, status: number, resBytes: number, ms: number): void => {
    this.responses++;
    this.bytes += resBytes;
    if (status >= 200 && status < 300) this.latencies.push(ms);
  };

  /**
   * Times each request of a connection to its response's headers (a stream's first byte: the
   * gateway sends them with its first event). One request is in flight per connection.
   */
  onClient = (client: EventEmitter): void => {
    let sent = 0;
    client.on("request", () => {
      sent = performance.now();
    });
    client.on("headers", ({ statusCode }: { statusCode: number }) => {
      if (statusCode >= 200 && statusCode < 300) this.firstBytes.push(performance.now() - sent);
    });
  };

  add(result: AutocannonResult): void {
    this.errors += result.errors;
    this.timeouts += result.timeouts;
    this.non2xx += result.non2xx;
    this.durationS = Math.max(this.durationS, result.duration);
    for (const [code, stat] of Object.entries(result.statusCodeStats))
      this.statusCodes[code] = (this.statusCodes[code] ?? 0) + stat.count;
  }

  result(): LoadResult {
    const { responses, bytes, errors, timeouts, non2xx, durationS, statusCodes } = this;
    const ok = this.latencies.length;
    return {
      responses,
      reqPerS: durationS > 0 ? responses / durationS : 0,
      ok,
      non2xx,
      errors,
      timeouts,
      durationS,
      bytes,
      statusCodes,
      latencyMs: summarise(this.latencies),
      firstByteMs: summarise(this.firstBytes),
      cpuMicros: cpuMicros(),
    };
  }
}

/** This process's CPU time since it started, so the orchestrator can see the load's own cost. */
function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** autocannon's connection i goes to url i mod n: a string for one, an array for several. */
function baseOptions(spec: LoadSpec, urls: string[] = spec.urls): Record<string, unknown> {
  return {
    url: urls.length === 1 ? urls[0] : urls,
    method: "POST",
    headers: spec.headers,
    body: spec.body,
    connections: spec.connections,
    pipelining: 1,
    duration: spec.durationS,
    timeout: spec.timeoutS,
  };
}

function runInstance(options: Record<string, unknown>, tally: Tally, windowMs = Infinity): Promise<void> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const instance = autocannon({ ...options, setupClient: tally.onClient }, (err, result) => {
      if (err) return reject(err);
      tally.add(result);
      resolve();
    });
    instance.on("response", tally.onResponse);
    instance.on("response", () => {
      if (performance.now() - started < windowMs) tally.inWindow++;
    });
  });
}

/**
 * As many requests as the connections can carry: each sends its next request on an answer.
 * Over several URLs autocannon deals the connections out in turn.
 */
async function saturate(spec: LoadSpec): Promise<LoadResult> {
  const tally = new Tally();
  await runInstance(baseOptions(spec), tally);
  return tally.result();
}

/**
 * A steady overall rate. autocannon paces each connection per wall-clock second: it sends
 * its quota back to back, then waits for the next second. One autocannon with many
 * connections therefore starts every connection's burst at the same instant: a burst at full
 * concurrency once a second, not a steady rate. Here each connection is its own autocannon
 * instance, started at its own offset within the second, so the bursts interleave and the
 * target sees requests arriving evenly, whatever its latency (while quota x latency < 1 s).
 * Over several URLs connection i goes to URL i mod n, so each server gets every n-th offset:
 * its own share of the rate, as evenly spread.
 */
async function paced(spec: LoadSpec, rate: number): Promise<LoadResult> {
  const connections = Math.min(spec.connections, rate);
  const tally = new Tally();
  const runs: Promise<void>[] = [];
  for (let i = 0; i < connections; i++) {
    const share = Math.floor(rate / connections) + (i < rate % connections ? 1 : 0);
    const options = {
      ...baseOptions(spec, [spec.urls[i % spec.urls.length]!]),
      connections: 1,
      connectionRate: share,
      // Else autocannon back-fills synthetic samples below every response (its coordinated-
      // omission correction); the latencies here come from the response events anyway.
      ignoreCoordinatedOmission: true,
    };
    const windowMs = spec.durationS * 1000;
    runs.push(sleep((i * 1000) / connections).then(() => runInstance(options, tally, windowMs)));
  }
  await Promise.all(runs);
  // autocannon may start one more second's quota just as its duration ends; counting only
  // the responses within each instance's duration gives the rate the target really sustained.
  return { ...tally.result(), reqPerS: tally.inWindow / spec.durationS };
}

const spec = JSON.parse(process.argv[2] ?? "null") as LoadSpec | null;
if (!spec) {
  process.stderr.write("usage: node bench/load.ts '<LoadSpec JSON>'\n");
  process.exit(2);
}
const result = spec.overallRate ? await paced(spec, spec.overallRate) : await saturate(spec);
process.stdout.write(`${JSON.stringify(result)}\n`);
