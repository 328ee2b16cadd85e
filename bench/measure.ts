// One measured run: a load-generator process against one target, with the CPU time of the
// target's processes (every gateway instance) and of the store's taken from /proc before and
// after, and their memory sampled while the load lasts.
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { BenchOptions } from "./options.ts";
import {
  cpuMicros,
  type MemoryParts,
  machineCpuMicros,
  memoryParts,
  RssSampler,
  statusKb,
} from "./proc-stats.ts";
import { runToEnd } from "./processes.ts";
import { IDLE_SECONDS } from "./report.ts";
import { requestBody, requestHeaders } from "./requests.ts";
import { ROOT, type Target, targetFor } from "./servers.ts";
import {
  type BenchStore,
  holdBackends,
  type StoreCpu,
  storeCpu,
  storeSpent,
  storeSpentParts,
} from "./stores.ts";
import type { LoadKind, LoadResult, LoadSpec, Mode, RunResult } from "./types.ts";

const LOAD_SCRIPT = join(ROOT, "bench/load.ts");
/** Per-request timeout of the load generator, seconds. */
const REQUEST_TIMEOUT_S = 10;
/**
 * Pause before and after a measured run, so work left over from the previous run (e.g. call
 * records still being committed) is not billed to this one, and this run's is.
 */
const SETTLE_MS = 500;

function rateConnections(mode: Mode, options: BenchOptions): number {
  return mode === "stream-paced" ? options.pacedRateConnections : options.rateConnections;
}

function loadSpec(asked: Target, mode: Mode, kind: LoadKind, options: BenchOptions): LoadSpec {
  const target = targetFor(asked, mode);
  const spec: LoadSpec = {
    urls: target.urls,
    headers: requestHeaders(target),
    body: requestBody(target.api, target.model, options.tokens, mode),
    connections: kind === "rate" ? rateConnections(mode, options) : options.connections,
    durationS: kind === "rate" ? options.rateDuration : options.duration,
    timeoutS: REQUEST_TIMEOUT_S,
  };
  if (kind === "rate") spec.overallRate = options.rate;
  return spec;
}

/** Runs the load generator in its own process; killed if it overruns its duration. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const limitMs = (spec.durationS + spec.timeoutS + 30) * 1000;
  const line = await runToEnd("load generator", [LOAD_SCRIPT, JSON.stringify(spec)], limitMs);
  return JSON.parse(line) as LoadResult;
}

/** An unmeasured saturation run so the JIT, pools and caches are warm before measuring. */
export async function warmUp(target: Target, mode: Mode, options: BenchOptions): Promise<void> {
  if (options.warmup <= 0) return;
  const spec = loadSpec(target, mode, "saturation", options);
  await runLoad({ ...spec, durationS: options.warmup });
}

function perRequest(micros: number, responses: number): number {
  return responses > 0 ? micros / responses : 0;
}

/**
 * The store's CPU per call, and its parts: PostgreSQL's (of it, the hold journal's connections',
 * told apart by their application_name once the run is over) and Redis's.
 */
async function storeCpuOf(store: BenchStore, before: StoreCpu, after: StoreCpu, responses: number) {
  const { postgres, holds: holdsCpu, redis } = storeSpentParts(before, after, await holdBackends(store));
  return {
    storeCpuUsPerReq: perRequest(postgres + redis, responses),
    storeCpuParts: {
      postgresUsPerReq: perRequest(postgres, responses),
      ...(holdsCpu === undefined ? {} : { holdsUsPerReq: perRequest(holdsCpu, responses) }),
      redisUsPerReq: perRequest(redis, responses),
    },
  };
}

/** CPU counters read before and after a run. */
interface CpuSnapshot {
  at: number;
  machine: number;
  /** per server pid */
  servers: Map<number, number>;
  /** per store, in the order of Processes.stores */
  stores: StoreCpu[];
}

function snapshot(pids: number[], stores: BenchStore[]): CpuSnapshot {
  const servers = new Map<number, number>();
  for (const pid of pids) servers.set(pid, cpuMicros(pid));
  return { at: performance.now(), machine: machineCpuMicros(), servers, stores: stores.map(storeCpu) };
}

/** CPU the processes spent between the two snapshots, together. */
function spent(before: CpuSnapshot, after: CpuSnapshot, pids: number[]): number {
  return pids.reduce((sum, pid) => sum + (after.servers.get(pid) ?? 0) - (before.servers.get(pid) ?? 0), 0);
}

/** CPU every store's processes spent between the two snapshots, together. */
function storesSpent(before: CpuSnapshot, after: CpuSnapshot): number {
  return before.stores.reduce((sum, store, i) => sum + storeSpent(store, after.stores[i]!), 0);
}

/** Cores used by processes other than the benchmark's servers, its stores and its load generator. */
function otherLoad(before: CpuSnapshot, after: CpuSnapshot, loadgenMicros: number): number {
  const ours = loadgenMicros + spent(before, after, [...before.servers.keys()]) + storesSpent(before, after);
  const wallMicros = (after.at - before.at) * 1000;
  return wallMicros > 0 ? Math.max(0, after.machine - before.machine - ours) / wallMicros : 0;
}

export interface Processes {
  target: Target;
  /** the mock this mode's requests end at */
  upstreamPid: number;
  /** every server the benchmark runs, so that their idle CPU is not taken for other load */
  serverPids: number[];
  /** every store of the run: the target's is billed to it, the others' are not other load */
  stores: BenchStore[];
}

export async function measure(
  { target: asked, upstreamPid, serverPids, stores }: Processes,
  mode: Mode,
  kind: LoadKind,
  options: BenchOptions,
): Promise<RunResult> {
  const spec = loadSpec(asked, mode, kind, options);
  // direct's paced form is the other mock, a process of its own
  const target = targetFor(asked, mode);
  await sleep(SETTLE_MS);
  const before = snapshot(serverPids, stores);
  const sampler = new RssSampler(target.pids);
  let load: LoadResult;
  try {
    load = await runLoad(spec);
    await sleep(SETTLE_MS);
  } finally {
    sampler.stop();
  }
  const after = snapshot(serverPids, stores);
  // a store's own processes work for its gateway only: none for direct and pass-through, and
  // SQLite's work is in the gateway's own CPU
  const own = stores.findIndex((s) => s.kind === target.store);
  const usesStore = own >= 0 && target.store !== "sqlite";
  const storeCost = usesStore
    ? await storeCpuOf(stores[own]!, before.stores[own]!, after.stores[own]!, load.responses)
    : {};
  return {
    mode,
    target: target.name,
    ...(target.store ? { store: target.store } : {}),
    load: kind,
    connections: spec.connections,
    ...(spec.overallRate ? { rate: spec.overallRate } : {}),
    reqPerS: load.reqPerS,
    latencyMs: load.latencyMs,
    firstByteMs: load.firstByteMs,
    cpuUsPerReq: perRequest(spent(before, after, target.pids), load.responses),
    ...storeCost,
    upstreamCpuUsPerReq: perRequest(spent(before, after, [upstreamPid]), load.responses),
    loadgenCpuUsPerReq: perRequest(load.cpuMicros, load.responses),
    otherLoadCores: otherLoad(before, after, load.cpuMicros),
    peakRssMb: Math.max(...target.pids.map((pid) => sampler.peakMb(pid))),
    responses: load.responses,
    errors: load.errors,
    timeouts: load.timeouts,
    non2xx: load.non2xx,
    bytesPerResponse: load.responses > 0 ? load.bytes / load.responses : 0,
    statusCodes: load.statusCodes,
  };
}

/** Processes' idle memory, read at one moment. */
export interface IdleMemory {
  /** each process's resident memory, MB */
  rssMb: number[];
  /** where the highest one's is, read right after */
  highestParts: MemoryParts | undefined;
}

/**
 * Resident memory of each process once it has been idle for `seconds` since `since`
 * (a performance.now() time). Marked handled at once: it is awaited only when the run ends, and
 * a process gone by then rejects it there rather than crash the run as an unhandled rejection.
 */
export function idleMemory(
  pids: number[],
  seconds = IDLE_SECONDS,
  since = performance.now(),
): Promise<IdleMemory> {
  const reading = sleep(Math.max(0, since + seconds * 1000 - performance.now())).then(() => {
    const rssMb = pids.map((pid) => statusKb(pid, "VmRSS") / 1024);
    const highest = pids[rssMb.indexOf(Math.max(...rssMb))];
    return { rssMb, highestParts: highest === undefined ? undefined : memoryParts(highest) };
  });
  reading.catch(() => {});
  return reading;
}
