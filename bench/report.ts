// Turns the runs into the printed table, the goal checks and the JSON written to .bench/.
import type { BenchOptions } from "./options.ts";
import type { LoadKind, Mode, RunResult, TargetName } from "./types.ts";

/** The goals: CPU per request against the floor, and latency added at the fixed rate. */
export const GOALS = { cpuRatio: 1.5, addedP50Ms: 0.5 } as const;

/** A fixed-rate run that reached less than this share of its rate did not test that rate. */
const RATE_REACHED = 0.97;
/** Cores of CPU used outside the benchmark above which a run's numbers are called disturbed. */
const DISTURBED_CORES = 0.15;

export interface GoalCheck {
  mode: Mode;
  /** gateway CPU µs/request ÷ pass-through's, in the fixed-rate run (saturation run alongside) */
  cpuRatio?: number;
  cpuRatioSaturation?: number;
  /** gateway p50 − direct p50 in the fixed-rate run, ms */
  addedP50Ms?: number;
  /** pass-through p50 − direct p50 in the fixed-rate run, ms: what any Node hop costs */
  passthroughAddedP50Ms?: number;
}

export interface GatewaySummary {
  /** the gateway process's peak resident memory over the whole bench (VmHWM) */
  peakRssMb: number;
  logLines: number;
  logTail: string[];
}

function find(runs: RunResult[], mode: Mode, target: TargetName, load: LoadKind): RunResult | undefined {
  return runs.find((r) => r.mode === mode && r.target === target && r.load === load);
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
  return modes.map((mode) => {
    const gateway = find(runs, mode, "gateway", "rate");
    const passthrough = find(runs, mode, "passthrough", "rate");
    return {
      mode,
      cpuRatio: ratio(gateway, passthrough),
      cpuRatioSaturation: ratio(
        find(runs, mode, "gateway", "saturation"),
        find(runs, mode, "passthrough", "saturation"),
      ),
      addedP50Ms: gateway?.addedP50Ms,
      passthroughAddedP50Ms: passthrough?.addedP50Ms,
    };
  });
}

export function failures(runs: RunResult[]): number {
  return runs.reduce((n, r) => n + r.errors + r.non2xx, 0);
}

// ---------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------

const COLUMNS = [
  "mode",
  "target",
  "load",
  "req/s",
  "p50 ms",
  "p99 ms",
  "+p50 ms",
  "CPU µs/req",
  "peak RSS MB",
  "errors",
  "non-2xx",
  "other load",
] as const;
/** Columns printed left-aligned; the numeric ones are right-aligned. */
const TEXT_COLUMNS = 3;

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

function row(run: RunResult): string[] {
  return [
    run.mode,
    run.target,
    loadLabel(run),
    rateCell(run),
    fixed(run.latencyMs.p50, 2),
    fixed(run.latencyMs.p99, 2),
    signed(run.addedP50Ms),
    fixed(run.cpuUsPerReq, 0),
    fixed(run.peakRssMb, 0),
    String(run.errors),
    String(run.non2xx),
    fixed(run.otherLoadCores, 2),
  ];
}

function table(rows: string[][]): string {
  const all = [[...COLUMNS], ...rows];
  const widths = COLUMNS.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < TEXT_COLUMNS ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const header = line([...COLUMNS]);
  return [header, "-".repeat(header.length), ...rows.map(line)].join("\n");
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
  for (const g of goals) {
    lines.push(
      `  ${g.mode.padEnd(6)} gateway CPU/req ÷ pass-through: ${times(g.cpuRatio)} ` +
        `[${times(g.cpuRatioSaturation)}]  goal ≤ ${GOALS.cpuRatio}×  ${verdict(g.cpuRatio, GOALS.cpuRatio)}`,
      `  ${g.mode.padEnd(6)} gateway added p50 vs direct:   ${signed(g.addedP50Ms)} ms  ` +
        `goal ≤ ${GOALS.addedP50Ms} ms  ${verdict(g.addedP50Ms, GOALS.addedP50Ms)}` +
        `  (pass-through adds ${signed(g.passthroughAddedP50Ms)} ms)`,
    );
  }
  return lines;
}

function gatewayLines(gateway: GatewaySummary | undefined): string[] {
  if (!gateway) return [];
  const lines = [`Gateway peak memory (VmHWM over the whole bench): ${gateway.peakRssMb.toFixed(0)} MB`];
  if (gateway.logLines > 0) {
    lines.push(`Gateway wrote ${gateway.logLines} log lines at its log level; the last ones:`);
    lines.push(...gateway.logTail.slice(-5).map((l) => `  ${l.slice(0, 300)}`));
  }
  return lines;
}

/** What routing costs per request: the model of two deployments against the one of one, same gateway. */
function routingLines(runs: RunResult[], modes: Mode[]): string[] {
  const lines: string[] = [];
  for (const mode of modes)
    for (const load of ["rate", "saturation"] as const) {
      const routed = find(runs, mode, "routed", load);
      const single = find(runs, mode, "gateway", load);
      if (!routed || !single) continue;
      lines.push(
        `  ${mode.padEnd(6)} ${load.padEnd(10)} CPU ${signed(routed.cpuUsPerReq - single.cpuUsPerReq)} µs/req, ` +
          `p50 ${signed(routed.latencyMs.p50 - single.latencyMs.p50)} ms, req/s ${routed.reqPerS.toFixed(0)} vs ${single.reqPerS.toFixed(0)}`,
      );
    }
  return lines.length ? ["Routing (routed: 2 deployments, against gateway: 1):", ...lines, ""] : [];
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
  gateway: GatewaySummary | undefined,
  options: BenchOptions,
): string {
  const failed = failures(runs);
  return [
    ...(options.provider === "openai"
      ? []
      : [
          `Upstream: the ${options.provider} mock; the gateway alone is measured, so its CPU µs/req is the`,
          "gateway's whole cost per request with this provider's translation (compare with --provider openai).",
          "",
        ]),
    table(runs.map(row)),
    "",
    ...goalLines(goals, options),
    "",
    ...routingLines(runs, options.modes),
    ...gatewayLines(gateway),
    ...disturbanceLines(runs),
    failed > 0
      ? `WARNING: ${failed} requests failed (errors + non-2xx): the numbers above are not a clean run.`
      : "All requests answered 2xx.",
  ].join("\n");
}
