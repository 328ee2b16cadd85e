// Turns the runs into the printed table, the goal checks and the JSON written to .bench/.
import type { BenchOptions } from "./options.ts";
import {
  isStream,
  type LoadKind,
  type Mode,
  type RunResult,
  type StoreKind,
  type TargetName,
} from "./types.ts";

/**
 * The issue's goals: CPU per request against the floor, and the latency the gateway adds over
 * the pass-through (its p50, its p99 and a stream's first byte) at the fixed rate.
 */
export const GOALS = { cpuRatio: 1.5, addedP50Ms: 0.5, addedP99Ms: 2, addedFirstByteMs: 1 } as const;

/** A fixed-rate run that reached less than this share of its rate did not test that rate. */
const RATE_REACHED = 0.97;
/** Cores of CPU used outside the benchmark above which a run's numbers are called disturbed. */
const DISTURBED_CORES = 0.15;

export interface GoalCheck {
  /** the store of the gateway checked */
  store: StoreKind;
  mode: Mode;
  /** gateway CPU µs/request ÷ pass-through's, in the fixed-rate run (saturation run alongside) */
  cpuRatio?: number;
  cpuRatioSaturation?: number;
  /** gateway p50 − pass-through p50 in the fixed-rate run, ms */
  addedP50Ms?: number;
  /** gateway p99 − pass-through p99 in the fixed-rate run, ms */
  addedP99Ms?: number;
  /** gateway p50 − direct p50 in the fixed-rate run, ms: the whole hop, for context */
  gatewayOverDirectP50Ms?: number;
  /** pass-through p50 − direct p50 in the fixed-rate run, ms: what any Node hop costs */
  passthroughAddedP50Ms?: number;
  /** streams: the gateway's p50 time to first byte − the pass-through's, in the fixed-rate run, ms */
  addedFirstByteMs?: number;
}

export interface GatewaySummary {
  store: StoreKind;
  /** the gateway processes' peak resident memory over the whole bench (VmHWM), the highest of them */
  peakRssMb: number;
  /** each instance's, in start order */
  instancesPeakRssMb: number[];
  logLines: number;
  logTail: string[];
}

/** A run of a target; of a gateway target, of the gateway on `store`. */
function find(
  runs: RunResult[],
  mode: Mode,
  target: TargetName,
  load: LoadKind,
  store?: StoreKind,
): RunResult | undefined {
  return runs.find((r) => r.mode === mode && r.target === target && r.load === load && r.store === store);
}

/** The stores whose gateway was measured, in the order they were. */
export function storesOf(runs: RunResult[]): StoreKind[] {
  return [...new Set(runs.flatMap((r) => (r.store ? [r.store] : [])))];
}

/** Fills in each run's p50 above the direct target's under the same mode and load. */
export function addLatencyDeltas(runs: RunResult[]): void {
  for (const run of runs) {
    const direct = find(runs, run.mode, "direct", run.load);
    if (direct && run.target !== "direct") run.addedP50Ms = run.latencyMs.p50 - direct.latencyMs.p50;
  }
}

function ratio(a: RunResult | undefined, b: RunResult | undefined): number | undefined {
  return a && b && b.cpuUsPerReq > 0 ? a.cpuUsPerReq / b.cpuUsPerReq : undefined;
}

export function checkGoals(runs: RunResult[], modes: Mode[]): GoalCheck[] {
  return storesOf(runs).flatMap((store) =>
    modes.map((mode) => {
      const gateway = find(runs, mode, "gateway", "rate", store);
      const passthrough = find(runs, mode, "passthrough", "rate");
      return {
        store,
        mode,
        cpuRatio: ratio(gateway, passthrough),
        cpuRatioSaturation: ratio(
          find(runs, mode, "gateway", "saturation", store),
          find(runs, mode, "passthrough", "saturation"),
        ),
        ...(gateway && passthrough
          ? {
              addedP50Ms: gateway.latencyMs.p50 - passthrough.latencyMs.p50,
              addedP99Ms: gateway.latencyMs.p99 - passthrough.latencyMs.p99,
            }
          : {}),
        gatewayOverDirectP50Ms: gateway?.addedP50Ms,
        passthroughAddedP50Ms: passthrough?.addedP50Ms,
        ...(isStream(mode) && gateway && passthrough
          ? { addedFirstByteMs: gateway.firstByteMs.p50 - passthrough.firstByteMs.p50 }
          : {}),
      };
    }),
  );
}

export function failures(runs: RunResult[]): number {
  return runs.reduce((n, r) => n + r.errors + r.non2xx, 0);
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

/**
 * Each column's heading and cell; `stores` only with several stores, `storeCpu` only with a
 * PostgreSQL one.
 */
const COLUMNS: { heading: string; only?: "stores" | "storeCpu"; cell(run: RunResult): string }[] = [
  { heading: "mode", cell: (r) => r.mode },
  { heading: "target", cell: (r) => r.target },
  { heading: "store", only: "stores", cell: (r) => r.store ?? "" },
  { heading: "load", cell: (r) => loadLabel(r) },
  { heading: "req/s", cell: (r) => rateCell(r) },
  { heading: "p50 ms", cell: (r) => fixed(r.latencyMs.p50, 2) },
  { heading: "p99 ms", cell: (r) => fixed(r.latencyMs.p99, 2) },
  { heading: "+p50 ms", cell: (r) => signed(r.addedP50Ms) },
  { heading: "CPU µs/req", cell: (r) => fixed(r.cpuUsPerReq, 0) },
  { heading: "store µs/req", only: "storeCpu", cell: (r) => fixed(r.storeCpuUsPerReq, 0) },
  { heading: "peak RSS MB", cell: (r) => fixed(r.peakRssMb, 0) },
  { heading: "errors", cell: (r) => String(r.errors) },
  { heading: "non-2xx", cell: (r) => String(r.non2xx) },
  { heading: "other load", cell: (r) => fixed(r.otherLoadCores, 2) },
];
/** Columns printed left-aligned; the numeric ones are right-aligned. */
const TEXT_COLUMNS = new Set(["mode", "target", "store", "load"]);

function fixed(value: number | undefined, digits: number): string {
  return value === undefined ? "—" : value.toFixed(digits);
}

function signed(value: number | undefined): string {
  if (value === undefined) return "—";
  return `${value >= 0 ? "+" : ""}${value.toFixed(2)}`;
}

function loadLabel(run: RunResult): string {
  return run.load === "rate" ? `${run.rate}/s, ${run.connections}c` : `max, ${run.connections}c`;
}

/** req/s, marked with "!" when a fixed-rate run fell short of its rate. */
function rateCell(run: RunResult): string {
  const short = run.load === "rate" && run.rate !== undefined && run.reqPerS < run.rate * RATE_REACHED;
  return `${run.reqPerS.toFixed(0)}${short ? "!" : ""}`;
}

function table(runs: RunResult[], options: BenchOptions): string {
  const shown = {
    stores: options.stores.length > 1,
    storeCpu: options.stores.some((s) => s !== "sqlite"),
  };
  const columns = COLUMNS.filter((c) => !c.only || shown[c.only]);
  const all = [columns.map((c) => c.heading), ...runs.map((run) => columns.map((c) => c.cell(run)))];
  const widths = columns.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (TEXT_COLUMNS.has(columns[i]!.heading) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join("  ");
  const [header, ...rows] = all.map(line);
  return [header!, "-".repeat(header!.length), ...rows].join("\n");
}

function verdict(value: number | undefined, limit: number): string {
  if (value === undefined) return "n/a";
  return value <= limit ? "ok" : "MISSED";
}

function times(value: number | undefined): string {
  return value === undefined ? "n/a" : `${value.toFixed(2)}×`;
}

function goalLines(goals: GoalCheck[], options: BenchOptions): string[] {
  const lines = [`Goals (fixed rate ${options.rate} req/s; saturation in brackets):`];
  const width = Math.max(6, ...goals.map((g) => g.mode.length));
  const several = new Set(goals.map((g) => g.store)).size > 1;
  for (const g of goals) {
    if (several && g.mode === goals.find((o) => o.store === g.store)?.mode) lines.push(`  ${g.store}:`);
    lines.push(
      `  ${g.mode.padEnd(width)} gateway CPU/req ÷ pass-through: ${times(g.cpuRatio)} ` +
        `[${times(g.cpuRatioSaturation)}]  goal ≤ ${GOALS.cpuRatio}×  ${verdict(g.cpuRatio, GOALS.cpuRatio)}`,
      `  ${g.mode.padEnd(width)} gateway p50 vs pass-through: ${signed(g.addedP50Ms)} ms  ` +
        `goal ≤ ${GOALS.addedP50Ms} ms  ${verdict(g.addedP50Ms, GOALS.addedP50Ms)}` +
        `  (over direct: gateway ${signed(g.gatewayOverDirectP50Ms)} ms, pass-through ${signed(g.passthroughAddedP50Ms)} ms)`,
      `  ${g.mode.padEnd(width)} gateway p99 vs pass-through: ${signed(g.addedP99Ms)} ms  ` +
        `goal ≤ ${GOALS.addedP99Ms} ms  ${verdict(g.addedP99Ms, GOALS.addedP99Ms)}`,
    );
    if (g.addedFirstByteMs !== undefined)
      lines.push(
        `  ${g.mode.padEnd(width)} gateway first byte vs pass-through: ${signed(g.addedFirstByteMs)} ms (p50)  ` +
          `goal ≤ ${GOALS.addedFirstByteMs} ms  ${verdict(g.addedFirstByteMs, GOALS.addedFirstByteMs)}`,
      );
  }
  return lines;
}

function gatewayLines(gateways: GatewaySummary[]): string[] {
  const several = gateways.length > 1;
  return gateways.flatMap((gateway) => {
    const name = several ? `Gateway on ${gateway.store}` : "Gateway";
    const each =
      gateway.instancesPeakRssMb.length > 1
        ? ` (the highest instance; each: ${gateway.instancesPeakRssMb.map((mb) => mb.toFixed(0)).join(", ")} MB)`
        : "";
    const lines = [
      `${name} peak memory (VmHWM over the whole bench): ${gateway.peakRssMb.toFixed(0)} MB${each}`,
    ];
    if (gateway.logLines > 0) {
      lines.push(`${name} wrote ${gateway.logLines} log lines at its log level; the last ones:`);
      lines.push(...gateway.logTail.slice(-5).map((l) => `  ${l.slice(0, 300)}`));
    }
    return lines;
  });
}

/**
 * Per mode and load, each target's row minus the gateway's of the same store: CPU µs/req, p50,
 * and both throughputs.
 */
function differenceLines(runs: RunResult[], modes: Mode[], targets: TargetName[]): string[] {
  const lines: string[] = [];
  const width = Math.max(...targets.map((t) => t.length));
  const modeWidth = Math.max(6, ...modes.map((m) => m.length));
  const stores = storesOf(runs);
  for (const store of stores)
    for (const mode of modes)
      for (const load of ["rate", "saturation"] as const)
        for (const target of targets) {
          const run = find(runs, mode, target, load, store);
          const gateway = find(runs, mode, "gateway", load, store);
          if (!run || !gateway) continue;
          lines.push(
            `  ${stores.length > 1 ? `${store} ` : ""}${mode.padEnd(modeWidth)} ${load.padEnd(10)} ` +
              `${targets.length > 1 ? `${target.padEnd(width)} ` : ""}` +
              `CPU ${signed(run.cpuUsPerReq - gateway.cpuUsPerReq)} µs/req, ` +
              `p50 ${signed(run.latencyMs.p50 - gateway.latencyMs.p50)} ms, req/s ${run.reqPerS.toFixed(0)} vs ${gateway.reqPerS.toFixed(0)}`,
          );
        }
  return lines;
}

/** What routing costs per request: the model of two deployments against the one of one, same gateway. */
function routingLines(runs: RunResult[], modes: Mode[]): string[] {
  const lines = differenceLines(runs, modes, ["routed"]);
  return lines.length ? ["Routing (routed: 2 deployments, against gateway: 1):", ...lines, ""] : [];
}

/**
 * What translating a client API costs per request: the same question through the Messages and
 * the Responses API, against chat completions, same gateway, same upstream call.
 */
function translationLines(runs: RunResult[], modes: Mode[]): string[] {
  const lines = differenceLines(runs, modes, ["messages", "responses"]);
  return lines.length
    ? [
        "Translation (the same call through /v1/messages and /v1/responses, against gateway's /v1/chat/completions):",
        ...lines,
        "",
      ]
    : [];
}

/** A store the gateway ran on: what it is (no credentials), and how many instances shared it. */
export interface StoreSetup {
  kind: StoreKind;
  description: string;
  instances: number;
}

/** Which gateways the numbers are of: their stores, their instances. */
function storeLines(stores: StoreSetup[]): string[] {
  const instances = (n: number) => (n === 1 ? "1 gateway instance" : `${n} gateway instances`);
  const many = stores.some((s) => s.instances > 1);
  return [
    ...stores.map(
      (s, i) =>
        `${i === 0 ? (stores.length > 1 ? "Stores:" : "Store:") : "       "} ${s.kind} (${s.description}); ${instances(s.instances)}`,
    ),
    ...(many
      ? ["  with several instances, the gateway rows' CPU is theirs summed, their RSS the highest"]
      : []),
    ...(stores.some((s) => s.kind !== "sqlite")
      ? [
          "  store µs/req: the CPU of the run database's PostgreSQL backends (and of the Redis server) per request",
        ]
      : []),
    "",
  ];
}

function disturbanceLines(runs: RunResult[]): string[] {
  const worst = Math.max(0, ...runs.map((r) => r.otherLoadCores));
  if (worst < DISTURBED_CORES) return [];
  return [
    `WARNING: other processes kept up to ${worst.toFixed(2)} cores busy during the runs ("other load"):`,
    "  those numbers are disturbed; run again on a quiet machine.",
  ];
}

export function formatReport(
  runs: RunResult[],
  goals: GoalCheck[],
  gateways: GatewaySummary[],
  options: BenchOptions,
  stores: StoreSetup[],
): string {
  const failed = failures(runs);
  return [
    ...storeLines(stores),
    ...(options.provider === "openai"
      ? []
      : [
          `Upstream: the ${options.provider} mock; the gateway alone is measured, so its CPU µs/req is the`,
          "gateway's whole cost per request with this provider's translation (compare with --provider openai).",
          "",
        ]),
    table(runs, options),
    "",
    ...goalLines(goals, options),
    "",
    ...routingLines(runs, options.modes),
    ...translationLines(runs, options.modes),
    ...gatewayLines(gateways),
    ...disturbanceLines(runs),
    failed > 0
      ? `WARNING: ${failed} requests failed (errors + non-2xx): the numbers above are not a clean run.`
      : "All requests answered 2xx.",
  ].join("\n");
}
