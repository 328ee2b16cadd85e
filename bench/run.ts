// `npm run bench`: the same load straight to a mock upstream, through a bare Node pass-through
// and through the gateway (chat completions, a routed model, the Messages and the Responses
// API; one instance or several on one PostgreSQL store), for JSON and streaming calls; prints
// a table and writes .bench/last.json. See bench/README.md for what each number means.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { measure, type Processes, warmUp } from "./measure.ts";
import { type BenchOptions, parseOptions, USAGE } from "./options.ts";
import { checkPerf, type PerfRecording, recordPerf } from "./perf-record.ts";
import { statusKb } from "./proc-stats.ts";
import { killAllNow, type ServerProcess, stopAll } from "./processes.ts";
import {
  addLatencyDeltas,
  checkGoals,
  failures,
  formatReport,
  type GatewaySummary,
  type GoalCheck,
} from "./report.ts";
import { preflight } from "./requests.ts";
import {
  apiTarget,
  collectProfiles,
  directTarget,
  ROOT,
  routedTarget,
  startGatewayTarget,
  startMock,
  startPassthrough,
  type Target,
  targetFor,
} from "./servers.ts";
import { type BenchStore, prepareStore, removeStores } from "./stores.ts";
import type { Mode, RunResult, TargetName } from "./types.ts";

const OUT_DIR = join(ROOT, ".bench");

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

// ---------------------------------------------------------------------------
// Clean-up: whatever happens, every child process ends, the temp folder goes, and so do the
// run's PostgreSQL database and Redis keys
// ---------------------------------------------------------------------------

let tempDir: string | undefined;
let cleaning: Promise<void> | undefined;

function cleanUp(): Promise<void> {
  cleaning ??= stopAll()
    .then(removeStores)
    .catch((err: unknown) => {
      log(`clean-up: ${err instanceof Error ? err.message : String(err)}`);
      process.exitCode = 1;
    })
    .finally(() => {
      if (tempDir) rmSync(tempDir, { recursive: true, force: true });
    });
  return cleaning;
}

function onSignal(signal: NodeJS.Signals): void {
  log(`\n${signal}: stopping the benchmark's processes…`);
  void cleanUp().finally(() => process.exit(130));
}

// ---------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------

function estimateSeconds(options: BenchOptions): number {
  // the first round of warm-ups, then each target's own warm-up, runs and pauses
  const perTarget = 2 * options.warmup + options.rateDuration + options.duration + 3;
  return Math.round(options.modes.length * options.targets.length * perTarget + 5);
}

/** The targets the gateway process (or instances) answers. */
const GATEWAY_TARGETS: readonly TargetName[] = ["gateway", "routed", "messages", "responses"];

/** The mocks: one writing each stream at once, and for the stream-paced mode one pacing its events. */
interface Mocks {
  burst: ServerProcess;
  paced?: ServerProcess | undefined;
}

async function startMocks(options: BenchOptions): Promise<Mocks> {
  const burst = await startMock(options.latency, options.provider);
  if (!options.modes.includes("stream-paced")) return { burst };
  return { burst, paced: await startMock(options.latency, options.provider, options.chunkDelay) };
}

/** The mock a mode's requests end at. */
function upstreamOf(mocks: Mocks, mode: Mode): ServerProcess {
  return mode === "stream-paced" && mocks.paced ? mocks.paced : mocks.burst;
}

async function startTargets(
  mocks: Mocks,
  options: BenchOptions,
  store: BenchStore,
  dir: string,
): Promise<Target[]> {
  const profiling = { dir: options.profile ? join(OUT_DIR, "profiles") : undefined, perf: options.perf };
  const targets: Target[] = [];
  const wanted = (name: TargetName) => options.targets.includes(name);
  const mock = mocks.burst;
  if (wanted("direct")) targets.push(directTarget(mock, mocks.paced));
  if (wanted("passthrough")) targets.push(await startPassthrough(mock, profiling, mocks.paced));
  if (GATEWAY_TARGETS.some(wanted)) {
    const { logLevel, safety, provider, instances, nodeOptions } = options;
    const gateway = await startGatewayTarget(
      mock,
      dir,
      {
        logLevel,
        safety,
        provider,
        instances,
        store,
        nodeOptions,
        pacedUpstream: mocks.paced && String(mocks.paced.info.url),
      },
      profiling,
    );
    if (wanted("gateway")) targets.push(gateway);
    if (wanted("routed")) targets.push(routedTarget(gateway));
    if (wanted("messages")) targets.push(apiTarget(gateway, "messages"));
    if (wanted("responses")) targets.push(apiTarget(gateway, "responses"));
  }
  return targets;
}

function describe(run: RunResult): string {
  const l = run.latencyMs;
  return (
    `    ${run.load.padEnd(10)} ${run.reqPerS.toFixed(0).padStart(6)} req/s  p50 ${l.p50.toFixed(2)} ms  ` +
    `p99 ${l.p99.toFixed(2)} ms  CPU ${run.cpuUsPerReq.toFixed(0)} µs/req  ` +
    `errors ${run.errors}  non-2xx ${run.non2xx}  other load ${run.otherLoadCores.toFixed(2)} cores`
  );
}

async function benchTarget(processes: Processes, mode: Mode, options: BenchOptions) {
  log(`  [${mode}] ${processes.target.name}`);
  await warmUp(processes.target, mode, options);
  const runs: RunResult[] = [];
  // The fixed-rate run goes first, so a saturation run's backlog cannot leak into it.
  for (const kind of ["rate", "saturation"] as const) {
    const run = await measure(processes, mode, kind, options);
    log(describe(run));
    runs.push(run);
  }
  return runs;
}

/**
 * One unmeasured warm-up of every target in every mode before anything is measured. The
 * gateway's targets share one process: without this, the first one measured (gateway, right
 * after start-up) would pay for the JIT and the heap growing for all of them, and look dearer
 * than the routed and translated calls measured after it.
 */
async function warmUpAll(targets: Target[], options: BenchOptions): Promise<void> {
  if (options.warmup <= 0) return;
  log("  warming up every target in every mode…");
  for (const mode of options.modes) for (const target of targets) await warmUp(target, mode, options);
}

async function benchAll(
  targets: Target[],
  options: BenchOptions,
  mocks: Mocks,
  store: BenchStore,
): Promise<RunResult[]> {
  const mockPids = [mocks.burst.pid, ...(mocks.paced ? [mocks.paced.pid] : [])];
  const serverPids = [
    ...new Set([...mockPids, ...targets.flatMap((t) => [...t.pids, ...(t.paced?.pids ?? [])])]),
  ];
  const runs: RunResult[] = [];
  for (const mode of options.modes) {
    const upstreamPid = upstreamOf(mocks, mode).pid;
    for (const target of targets)
      runs.push(...(await benchTarget({ target, upstreamPid, serverPids, store }, mode, options)));
  }
  return runs;
}

function gatewaySummary(targets: Target[]): GatewaySummary | undefined {
  const gateway = targets.find((t) => GATEWAY_TARGETS.includes(t.name));
  if (!gateway) return undefined;
  const peaks = gateway.pids.map((pid) => statusKb(pid, "VmHWM") / 1024);
  const many = gateway.servers.length > 1;
  return {
    peakRssMb: Math.max(...peaks),
    instancesPeakRssMb: peaks,
    logLines: gateway.servers.reduce((n, s) => n + s.logs.count, 0),
    // each instance's lines, named when there are several
    logTail: gateway.servers.flatMap((s) => s.logs.tail.map((line) => (many ? `${s.name}: ${line}` : line))),
  };
}

function gitCommit(): string | undefined {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

function writeResults(
  options: BenchOptions,
  store: BenchStore,
  runs: RunResult[],
  goals: GoalCheck[],
  gateway: GatewaySummary | undefined,
): string {
  mkdirSync(OUT_DIR, { recursive: true });
  const file = join(OUT_DIR, "last.json");
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version };
  // options.store and options.instances say what it ran on; no URL (nor credentials) here
  const where = { kind: store.kind, instances: options.instances, description: store.description };
  const doc = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine,
    options,
    store: where,
    runs,
    goals,
    gateway,
  };
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  return file;
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

/**
 * One perf recording per server process kind, over the warm-ups and every measured run: the
 * gateway's covers all the targets it answers (routed, messages, responses too).
 */
function startRecordings(targets: Target[]): Promise<PerfRecording[]> {
  const dir = join(OUT_DIR, "perf");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return Promise.all(
    targets
      .filter((t) => t.name === "passthrough" || t.name === "gateway")
      .map((t) => recordPerf(dir, t.name, t.pids)),
  );
}

async function bench(options: BenchOptions): Promise<number> {
  tempDir = mkdtempSync(join(tmpdir(), "gateway-bench-"));
  log(
    `benchmark: about ${estimateSeconds(options)} s; ${options.provider} mock upstream, latency ${options.latency} ms` +
      (options.modes.includes("stream-paced")
        ? `, ${options.chunkDelay} ms between the events of paced streams`
        : "") +
      "; " +
      `store ${options.store}, ${options.instances} gateway instance${options.instances > 1 ? "s" : ""}` +
      (options.safety === "off" ? "" : "; gateway with content safety (rules reviewer, reviewed streams)") +
      (options.nodeOptions.length ? `; gateway run with ${options.nodeOptions.join(" ")}` : ""),
  );
  if (options.perf) checkPerf();
  const store = await prepareStore(options.store);
  const mocks = await startMocks(options);
  const targets = await startTargets(mocks, options, store, tempDir);
  for (const target of targets)
    for (const mode of options.modes) await preflight(targetFor(target, mode), mode, options.tokens);
  const recordings = options.perf ? await startRecordings(targets) : [];
  const started = Date.now();
  await warmUpAll(targets, options);
  const runs = await benchAll(targets, options, mocks, store);
  for (const recording of recordings) await recording.stop();
  addLatencyDeltas(runs);
  const goals = checkGoals(runs, options.modes);
  const gateway = gatewaySummary(targets);
  process.stdout.write(`\n${formatReport(runs, goals, gateway, options, store.description)}\n`);
  const file = writeResults(options, store, runs, goals, gateway);
  log(`\nmeasured for ${((Date.now() - started) / 1000).toFixed(0)} s; results in ${file}`);
  // A run with failed requests must not look like a good one to a script either.
  return failures(runs) > 0 ? 1 : 0;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2), process.env);
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  process.once("exit", killAllNow);
  try {
    process.exitCode = await bench(options);
  } finally {
    await cleanUp();
  }
  if (options.perf && process.exitCode === 0)
    log(
      `CPU-time recordings in ${join(OUT_DIR, "perf")}; read one with: node bench/perf-summary.ts ${join(OUT_DIR, "perf", "gateway.data")}`,
    );
  // The profiles are written as the servers exit, so only now are they complete.
  if (options.profile) {
    collectProfiles(join(OUT_DIR, "profiles"));
    log(
      `CPU profiles in ${join(OUT_DIR, "profiles")} (worker threads' in workers/); read one with: node bench/profile-summary.ts FILE`,
    );
  }
}

main().catch((err: unknown) => {
  log(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
