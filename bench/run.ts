// `npm run bench`: the same load straight to a mock upstream, through a bare Node pass-through
// and through the gateway (chat completions, a routed model, the Messages and the Responses
// API; one instance or several on one PostgreSQL store), for JSON and streaming calls; prints
// a table and writes .bench/last.json. See bench/README.md for what each number means.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { isBuildOf } from "../bin/source-digest.js";
import { type IdleMemory, idleMemory, measure, type Processes, warmUp } from "./measure.ts";
import {
  type BenchOptions,
  GATEWAY_TARGETS,
  instancesOn,
  parseOptions,
  storeTargets,
  USAGE,
} from "./options.ts";
import { checkPerf, type PerfRecording, recordPerf } from "./perf-record.ts";
import { statusKb } from "./proc-stats.ts";
import { killAllNow, lostServers, type ServerProcess, stopAll } from "./processes.ts";
import {
  addLatencyDeltas,
  type BenchResults,
  checkGoals,
  failures,
  formatReport,
  type GatewaySummary,
  type GoalCheck,
  IDLE_AFTER_SECONDS,
  IDLE_SECONDS,
  type MemorySummary,
  summarizeStores,
} from "./report.ts";
import { preflight } from "./requests.ts";
import {
  apiTarget,
  collectProfiles,
  directTarget,
  type Profiling,
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
  const gateways = [...storeTargets(options).values()].reduce((n, targets) => n + targets.length, 0);
  // the pass-through is measured again after the gateways (benchAll)
  const again = gateways > 0 && options.targets.includes("passthrough") ? 1 : 0;
  const baselines = options.targets.filter((t) => !GATEWAY_TARGETS.includes(t)).length + again;
  // the first round of warm-ups, then each target's own warm-up, runs and pauses
  const perTarget = 2 * options.warmup + options.rateDuration + options.duration + 3;
  // and the idle memory, read after start-up and after the last run
  return Math.round(
    options.modes.length * (baselines + gateways) * perTarget + IDLE_SECONDS + IDLE_AFTER_SECONDS + 5,
  );
}

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

function profilingOf(options: BenchOptions): Profiling {
  return { dir: options.profile ? join(OUT_DIR, "profiles") : undefined, perf: options.perf };
}

/** direct and passthrough, measured once for every store's gateway. */
async function startBaselines(mocks: Mocks, options: BenchOptions): Promise<Target[]> {
  const targets: Target[] = [];
  if (options.targets.includes("direct")) targets.push(directTarget(mocks.burst, mocks.paced));
  if (options.targets.includes("passthrough"))
    targets.push(await startPassthrough(mocks.burst, profilingOf(options), mocks.paced));
  return targets;
}

/** One store's gateway: its instances, and the targets they answer. */
interface Setup {
  store: BenchStore;
  gateway: Target;
  targets: Target[];
  /** the instances' memory IDLE_SECONDS after they started */
  idleStart: Promise<IdleMemory>;
}

async function startSetup(
  mocks: Mocks,
  options: BenchOptions,
  store: BenchStore,
  names: TargetName[],
  dir: string,
): Promise<Setup> {
  const { logLevel, safety, provider, nodeOptions } = options;
  mkdirSync(dir, { recursive: true });
  const gateway = await startGatewayTarget(
    mocks.burst,
    dir,
    {
      logLevel,
      safety,
      provider,
      instances: instancesOn(store.kind, options),
      store,
      nodeOptions,
      pacedUpstream: mocks.paced && String(mocks.paced.info.url),
      label: options.stores.length > 1 ? store.kind : undefined,
    },
    profilingOf(options),
  );
  const targets: Target[] = [];
  if (names.includes("gateway")) targets.push(gateway);
  if (names.includes("routed")) targets.push(routedTarget(gateway));
  if (names.includes("messages")) targets.push(apiTarget(gateway, "messages"));
  if (names.includes("responses")) targets.push(apiTarget(gateway, "responses"));
  return { store, gateway, targets, idleStart: idleMemory(gateway.pids) };
}

/** Each store made and its gateway started, in the order of --store. */
async function startSetups(mocks: Mocks, options: BenchOptions, dir: string): Promise<Setup[]> {
  const setups: Setup[] = [];
  for (const [kind, names] of storeTargets(options)) {
    if (names.length === 0) continue;
    const store = await prepareStore(kind);
    setups.push(await startSetup(mocks, options, store, names, join(dir, kind.replace("+", "-"))));
  }
  return setups;
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
  const { name, store } = processes.target;
  log(`  [${mode}] ${name}${store && processes.stores.length > 1 ? ` on ${store}` : ""}`);
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

/**
 * Mode by mode, every target in turn: the baselines, then each store's gateway, then the
 * pass-through again. A mode's pass-through readings then bracket the gateways they are
 * compared with, minutes apart, not a whole run, so a change in the machine's other load moves
 * both. Once a server has answered its last measured run, its idle memory is read
 * IDLE_AFTER_SECONDS later (while the others go on), by the pass-through's name or its store's.
 */
async function benchAll(
  baselines: Target[],
  setups: Setup[],
  options: BenchOptions,
  mocks: Mocks,
): Promise<{ runs: RunResult[]; idleAfter: Map<string, Promise<IdleMemory>> }> {
  const targets = [...baselines, ...setups.flatMap((s) => s.targets)];
  const mockPids = [mocks.burst.pid, ...(mocks.paced ? [mocks.paced.pid] : [])];
  const serverPids = [
    ...new Set([
      ...mockPids,
      ...[...targets, ...setups.map((s) => s.gateway)].flatMap((t) => [...t.pids, ...(t.paced?.pids ?? [])]),
    ]),
  ];
  const stores = setups.map((s) => s.store);
  // The pass-through is measured again after the gateways, when there are any: its reading
  // moved from 166 to 270 µs a call between runs (decision 0044); the ratios divide by the mean.
  const again = setups.length > 0 ? baselines.find((t) => t.name === "passthrough") : undefined;
  const lastOf = new Map<Target, string>(setups.map((s) => [s.targets.at(-1)!, s.store.kind]));
  for (const t of baselines) if (t.name === "passthrough" && !again) lastOf.set(t, "passthrough");
  const idleAfter = new Map<string, Promise<IdleMemory>>();
  const runs: RunResult[] = [];
  for (const mode of options.modes) {
    const upstreamPid = upstreamOf(mocks, mode).pid;
    const last = mode === options.modes.at(-1);
    for (const target of targets) {
      runs.push(...(await benchTarget({ target, upstreamPid, serverPids, stores }, mode, options)));
      const server = lastOf.get(target);
      if (last && server) idleAfter.set(server, idleMemory(target.pids, IDLE_AFTER_SECONDS));
    }
    if (!again) continue;
    const repeated = await benchTarget({ target: again, upstreamPid, serverPids, stores }, mode, options);
    runs.push(...repeated.map((run): RunResult => ({ ...run, again: true })));
    if (last) idleAfter.set("passthrough", idleMemory(again.pids, IDLE_AFTER_SECONDS));
  }
  return { runs, idleAfter };
}

/** Peak memory over the whole bench, with the idle readings. */
async function memory(
  pids: number[],
  idleStart: Promise<IdleMemory>,
  idleAfter: Promise<IdleMemory> | undefined,
): Promise<MemorySummary> {
  const after = await idleAfter;
  return {
    peakRssMb: pids.map((pid) => statusKb(pid, "VmHWM") / 1024),
    idleStartRssMb: (await idleStart).rssMb,
    idleAfterRssMb: after?.rssMb ?? [],
    ...(after?.highestParts ? { idleAfterParts: after.highestParts } : {}),
  };
}

async function gatewaySummary(
  setup: Setup,
  idleAfter: Map<string, Promise<IdleMemory>>,
): Promise<GatewaySummary> {
  const { gateway } = setup;
  const many = gateway.servers.length > 1;
  return {
    store: setup.store.kind,
    memory: await memory(gateway.pids, setup.idleStart, idleAfter.get(setup.store.kind)),
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

function writeResults(options: BenchOptions, results: BenchResults, goals: GoalCheck[]): string {
  mkdirSync(OUT_DIR, { recursive: true });
  const file = join(OUT_DIR, "last.json");
  const machine = { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version };
  // the stores' descriptions name no URL (nor credentials)
  const { runs, stores, gateways, passthrough } = results;
  const doc = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    code: gatewayCode(),
    machine,
    options,
    stores,
    runs,
    perStore: summarizeStores(results, options.modes),
    goals,
    gateways,
    passthrough,
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
function startRecordings(baselines: Target[], setups: Setup[]): Promise<PerfRecording[]> {
  const dir = join(OUT_DIR, "perf");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const passthrough = baselines.filter((t) => t.name === "passthrough");
  return Promise.all([
    ...passthrough.map((t) => recordPerf(dir, t.name, t.pids)),
    ...setups.map(({ store, gateway }) =>
      recordPerf(dir, setups.length > 1 ? `gateway-${store.kind}` : "gateway", gateway.pids),
    ),
  ]);
}

function describeStores(options: BenchOptions): string {
  const stores = options.stores.map((kind) => {
    const n = instancesOn(kind, options);
    return n > 1 ? `${kind} (${n} gateway instances)` : kind;
  });
  return `${options.stores.length > 1 ? "stores" : "store"} ${stores.join(", ")}`;
}

/**
 * Which code `npm start` runs here (bin/chat-gateway.js): the build when dist/ is a build of
 * this source, as after `npm install`; the TypeScript otherwise, which holds more memory.
 */
function gatewayCode(): string {
  return isBuildOf(join(ROOT, "dist"), join(ROOT, "src"))
    ? "dist/ (a build of this source)"
    : "src/ (TypeScript: dist/ is not a build of this source; `npm run build` measures what `npm start` runs after `npm install`)";
}

async function bench(options: BenchOptions): Promise<number> {
  tempDir = mkdtempSync(join(tmpdir(), "gateway-bench-"));
  log(`gateway code: ${gatewayCode()}`);
  log(
    `benchmark: about ${estimateSeconds(options)} s; ${options.provider} mock upstream, latency ${options.latency} ms` +
      (options.modes.includes("stream-paced")
        ? `, ${options.chunkDelay} ms between the events of paced streams`
        : "") +
      `; ${describeStores(options)}` +
      (options.safety === "off" ? "" : "; gateway with content safety (rules reviewer, reviewed streams)") +
      (options.nodeOptions.length ? `; gateway run with ${options.nodeOptions.join(" ")}` : ""),
  );
  if (options.perf) checkPerf();
  const mocks = await startMocks(options);
  const baselines = await startBaselines(mocks, options);
  const passthrough = baselines.find((t) => t.name === "passthrough");
  const passthroughIdle = passthrough && idleMemory(passthrough.pids);
  const setups = await startSetups(mocks, options, tempDir);
  // before any request: the idle memory of a process that has only started
  log(`  waiting for the servers' idle memory (${IDLE_SECONDS} s after each started)…`);
  await Promise.all([passthroughIdle, ...setups.map((s) => s.idleStart)]);
  for (const target of [...baselines, ...setups.flatMap((s) => s.targets)])
    for (const mode of options.modes) await preflight(targetFor(target, mode), mode, options.tokens);
  const recordings = options.perf ? await startRecordings(baselines, setups) : [];
  const started = Date.now();
  await warmUpAll([...baselines, ...setups.flatMap((s) => s.targets)], options);
  const { runs, idleAfter } = await benchAll(baselines, setups, options, mocks);
  for (const recording of recordings) await recording.stop();
  log(`  waiting for the servers' idle memory (${IDLE_AFTER_SECONDS} s after each one's last run)…`);
  addLatencyDeltas(runs);
  const results: BenchResults = {
    runs,
    stores: setups.map(({ store, gateway }) => ({
      kind: store.kind,
      description: store.description,
      instances: gateway.pids.length,
    })),
    gateways: await Promise.all(setups.map((s) => gatewaySummary(s, idleAfter))),
    passthrough:
      passthrough && passthroughIdle
        ? await memory(passthrough.pids, passthroughIdle, idleAfter.get("passthrough"))
        : undefined,
  };
  const goals = checkGoals(results, options.modes);
  process.stdout.write(`\n${formatReport(results, goals, options)}\n`);
  const file = writeResults(options, results, goals);
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
      `CPU-time recordings in ${join(OUT_DIR, "perf")}; read one with: node bench/perf-summary.ts ${join(OUT_DIR, "perf", options.stores.length > 1 ? `gateway-${options.stores[0]}.data` : "gateway.data")}`,
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
  for (const server of lostServers()) log(`before that, ${server}`);
  process.exitCode = 1;
});
