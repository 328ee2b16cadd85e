// The console benchmark's tables: one for the JSON calls, one for the exports, per phase
// (before and after retention), with the calls over the thresholds of issue #5 marked.
import type { CallResult, CallRun } from "./console-load.ts";

/** p95 above this on a JSON call, or time to first byte above EXPORT_TTFB_MS on an export: slow */
export const VIEW_P95_MS = 50;
export const EXPORT_TTFB_MS = 100;

export interface Phase {
  name: string;
  /** call records in the store while it was measured */
  records: number;
  results: CallResult[];
}

const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
const fmt = (n: number) => n.toLocaleString("en-US");

function table(header: string[], rows: string[][], rightFrom: number): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < rightFrom ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), ...rows.map(line)].join("\n");
}

function failures(run: CallRun): string {
  return run.failed ? ` (${run.failed} failed: ${JSON.stringify(run.statuses)})` : "";
}

/**
 * Over the threshold at the lowest concurrency measured (1 by default). With more requests in
 * flight than the machine has cores, a request waits for the ones ahead of it: latency there
 * says how the load queues (see req/s), not how long a call takes.
 */
export function isSlow(result: CallResult, run: CallRun): boolean {
  if (run.concurrency !== Math.min(...result.runs.map((r) => r.concurrency))) return false;
  return result.kind === "json" ? run.totalMs.p95 > VIEW_P95_MS : run.ttfbMs.p95 > EXPORT_TTFB_MS;
}

function jsonTable(results: CallResult[]): string {
  const rows: string[][] = [];
  for (const r of results.filter((x) => x.kind === "json")) {
    if (!r.runs.length) {
      rows.push([
        r.id,
        ms(r.cold.ms),
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        `${r.cold.status} ${r.cold.error ?? ""}`,
      ]);
      continue;
    }
    r.runs.forEach((run, i) => {
      rows.push([
        i === 0 ? r.id : "",
        i === 0 ? ms(r.cold.ms) : "",
        String(run.concurrency),
        ms(run.totalMs.p50),
        `${ms(run.totalMs.p95)}${isSlow(r, run) ? " !" : ""}`,
        ms(run.totalMs.max),
        run.reqPerS.toFixed(0),
        i === 0 ? (r.cold.bytes / 1024).toFixed(1) : "",
        i === 0 && r.cold.rows !== null ? fmt(r.cold.rows) : "",
        run.gatewayCpuMsPerReq.toFixed(2),
        run.storeCpuMsPerReq === null ? "-" : run.storeCpuMsPerReq.toFixed(2),
        `${run.otherLoadCores.toFixed(2)}${failures(run)}`,
      ]);
    });
  }
  return table(
    [
      "call",
      "first ms",
      "c",
      "p50 ms",
      "p95 ms",
      "max ms",
      "req/s",
      "KB",
      "rows",
      "gw CPU ms/req",
      "db CPU",
      "other",
    ],
    rows,
    1,
  );
}

function exportTable(results: CallResult[]): string {
  const rows: string[][] = [];
  for (const r of results.filter((x) => x.kind === "export")) {
    if (!r.runs.length) {
      rows.push([
        r.id,
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
        `${r.cold.status} ${r.cold.error ?? ""}`,
      ]);
      continue;
    }
    r.runs.forEach((run, i) => {
      rows.push([
        i === 0 ? r.id : "",
        i === 0 && r.cold.rows !== null ? fmt(r.cold.rows) : "",
        i === 0 ? (run.bytes / 1_048_576).toFixed(2) : "",
        String(run.concurrency),
        ms(run.ttfbMs.p50),
        `${ms(run.ttfbMs.p95)}${isSlow(r, run) ? " !" : ""}`,
        ms(run.totalMs.p50),
        ms(run.totalMs.p95),
        ms(run.totalMs.max),
        run.gatewayCpuMsPerReq.toFixed(1),
        run.storeCpuMsPerReq === null ? "-" : run.storeCpuMsPerReq.toFixed(1),
        `${run.otherLoadCores.toFixed(2)}${failures(run)}`,
      ]);
    });
  }
  return table(
    [
      "export",
      "lines",
      "MB",
      "c",
      "TTFB p50",
      "TTFB p95",
      "total p50",
      "total p95",
      "total max",
      "gw CPU ms/req",
      "db CPU",
      "other",
    ],
    rows,
    1,
  );
}

/** Above this many cores busy elsewhere, a run's latencies are disturbed. */
export const OTHER_LOAD_WARN = 0.15;

/** The share of runs during which the machine was busy with something else. */
export function disturbedRuns(phase: Phase): { disturbed: number; runs: number } {
  const runs = phase.results.flatMap((r) => r.runs);
  return { disturbed: runs.filter((r) => r.otherLoadCores > OTHER_LOAD_WARN).length, runs: runs.length };
}

export function formatPhase(phase: Phase): string {
  const { disturbed, runs } = disturbedRuns(phase);
  return [
    `== ${phase.name}: ${fmt(phase.records)} call records in the store ==`,
    ...(disturbed
      ? [`   ${disturbed} of ${runs} runs had other load above ${OTHER_LOAD_WARN} cores (column "other")`]
      : []),
    "",
    jsonTable(phase.results),
    "",
    exportTable(phase.results),
  ].join("\n");
}

/** The calls over the thresholds, one line each; empty when none. */
export function slowCalls(phases: Phase[]): string[] {
  const lines: string[] = [];
  for (const phase of phases)
    for (const r of phase.results)
      for (const run of r.runs)
        if (isSlow(r, run)) {
          const disturbed =
            run.otherLoadCores > OTHER_LOAD_WARN
              ? ` (disturbed: other load ${run.otherLoadCores.toFixed(2)} cores)`
              : "";
          lines.push(
            (r.kind === "json"
              ? `${phase.name}: ${r.id} at concurrency ${run.concurrency}: p95 ${ms(run.totalMs.p95)} ms > ${VIEW_P95_MS} ms`
              : `${phase.name}: ${r.id} at concurrency ${run.concurrency}: TTFB p95 ${ms(run.ttfbMs.p95)} ms > ${EXPORT_TTFB_MS} ms`) +
              disturbed,
          );
        }
  return lines;
}

/** Calls whose answers were not all 2xx: the numbers of such a run are not a clean run. */
export function failedCalls(phases: Phase[]): string[] {
  const lines: string[] = [];
  for (const phase of phases)
    for (const r of phase.results) {
      if (r.cold.error !== null) lines.push(`${phase.name}: ${r.id}: ${r.cold.status} ${r.cold.error}`);
      for (const run of r.runs)
        if (run.failed)
          lines.push(`${phase.name}: ${r.id} c=${run.concurrency}: ${JSON.stringify(run.statuses)}`);
    }
  return lines;
}
