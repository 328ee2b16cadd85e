// One measured run: a load-generator process against one target, with the target's CPU time
// taken from /proc before and after, and its memory sampled while the load lasts.
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { BenchOptions } from "./options.ts";
import { cpuMicros, machineCpuMicros, RssSampler } from "./proc-stats.ts";
import { runToEnd } from "./processes.ts";
import { chatBody, requestHeaders } from "./requests.ts";
import { ROOT, type Target } from "./servers.ts";
import type { LoadKind, LoadResult, LoadSpec, Mode, RunResult } from "./types.ts";

const LOAD_SCRIPT = join(ROOT, "bench/load.ts");
/** Per-request timeout of the load generator, seconds. */
const REQUEST_TIMEOUT_S = 10;
/**
 * Pause before and after a measured run, so work left over from the previous run (e.g. call
 * records still being committed) is not billed to this one, and this run's is.
 */
const SETTLE_MS = 500;

function loadSpec(target: Target, mode: Mode, kind: LoadKind, options: BenchOptions): LoadSpec {
  const spec: LoadSpec = {
    url: target.url,
    headers: requestHeaders(target),
    body: chatBody(target.model, options.tokens, mode),
    connections: kind === "rate" ? options.rateConnections : options.connections,
    durationS: kind === "rate" ? options.rateDuration : options.duration,
    timeoutS: REQUEST_TIMEOUT_S,
  };
  if (kind === "rate") spec.overallRate = options.rate;
  return spec;
}

/** Runs the load generator in its own process; killed if it overruns its duration. */
async function runLoad(spec: LoadSpec): Promise<LoadResult> {
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

/** CPU counters read before and after a run. */
interface CpuSnapshot {
  at: number;
  machine: number;
  /** per server pid */
  servers: Map<number, number>;
}

function snapshot(pids: number[]): CpuSnapshot {
  const servers = new Map<number, number>();
  for (const pid of pids) servers.set(pid, cpuMicros(pid));
  return { at: performance.now(), machine: machineCpuMicros(), servers };
}

function spent(before: CpuSnapshot, after: CpuSnapshot, pid: number): number {
  return (after.servers.get(pid) ?? 0) - (before.servers.get(pid) ?? 0);
}

/** Cores used by processes other than the benchmark's servers and load generator. */
function otherLoad(before: CpuSnapshot, after: CpuSnapshot, loadgenMicros: number): number {
  let ours = loadgenMicros;
  for (const pid of before.servers.keys()) ours += spent(before, after, pid);
  const wallMicros = (after.at - before.at) * 1000;
  return wallMicros > 0 ? Math.max(0, after.machine - before.machine - ours) / wallMicros : 0;
}

export interface Processes {
  target: Target;
  upstreamPid: number;
  /** every server the benchmark runs, so that their idle CPU is not taken for other load */
  serverPids: number[];
}

export async function measure(
  { target, upstreamPid, serverPids }: Processes,
  mode: Mode,
  kind: LoadKind,
  options: BenchOptions,
): Promise<RunResult> {
  const spec = loadSpec(target, mode, kind, options);
  await sleep(SETTLE_MS);
  const before = snapshot(serverPids);
  const sampler = new RssSampler([target.pid]);
  let load: LoadResult;
  try {
    load = await runLoad(spec);
    await sleep(SETTLE_MS);
  } finally {
    sampler.stop();
  }
  const after = snapshot(serverPids);
  return {
    mode,
    target: target.name,
    load: kind,
    connections: spec.connections,
    ...(spec.overallRate ? { rate: spec.overallRate } : {}),
    reqPerS: load.reqPerS,
    latencyMs: load.latencyMs,
    cpuUsPerReq: perRequest(spent(before, after, target.pid), load.responses),
    upstreamCpuUsPerReq: perRequest(spent(before, after, upstreamPid), load.responses),
    loadgenCpuUsPerReq: perRequest(load.cpuMicros, load.responses),
    otherLoadCores: otherLoad(before, after, load.cpuMicros),
    peakRssMb: sampler.peakMb(target.pid),
    responses: load.responses,
    errors: load.errors,
    timeouts: load.timeouts,
    non2xx: load.non2xx,
    bytesPerResponse: load.responses > 0 ? load.bytes / load.responses : 0,
    statusCodes: load.statusCodes,
  };
}
