// The bench's report: the store and instances in its header, the store's CPU column on
// PostgreSQL only, and the Translation block (messages and responses against gateway).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseOptions } from "./options.ts";
import { addLatencyDeltas, checkGoals, formatReport, type StoreSetup } from "./report.ts";
import type { LoadKind, Mode, RunResult, StoreKind, TargetName } from "./types.ts";

function run(
  target: TargetName,
  mode: Mode,
  load: LoadKind,
  cpu: number,
  p50: number,
  reqPerS: number,
  store?: number,
  firstByte = p50,
  p99 = p50,
): RunResult {
  return {
    mode,
    target,
    ...(target === "direct" || target === "passthrough" ? {} : { store: "sqlite" as const }),
    load,
    connections: 50,
    ...(load === "rate" ? { rate: 500 } : {}),
    reqPerS,
    latencyMs: { p50, p90: p50, p99, max: p99, mean: p50 },
    firstByteMs: { p50: firstByte, p90: firstByte, p99: firstByte, max: firstByte, mean: firstByte },
    cpuUsPerReq: cpu,
    ...(store === undefined ? {} : { storeCpuUsPerReq: store }),
    upstreamCpuUsPerReq: 0,
    loadgenCpuUsPerReq: 0,
    otherLoadCores: 0,
    peakRssMb: 300,
    responses: 1000,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    bytesPerResponse: 500,
    statusCodes: { "200": 1000 },
  };
}

const RUNS: RunResult[] = [
  run("gateway", "json", "rate", 700, 22, 500, 900),
  run("gateway", "json", "saturation", 300, 27, 1800, 600),
  run("messages", "json", "rate", 760, 22.25, 500, 910),
  run("messages", "json", "saturation", 320, 27.5, 1700, 610),
  run("responses", "json", "rate", 690, 21.9, 500, 890),
];

const SQLITE: StoreSetup[] = [
  { kind: "sqlite", description: "SQLite in the run's temp folder", instances: 1 },
];

/** The same runs of the gateway on another store. */
function on(store: StoreKind, runs: RunResult[]): RunResult[] {
  return runs.map((r) => (r.store ? { ...r, store } : r));
}

function report(argv: string[], stores: StoreSetup[], runs = RUNS): string {
  const options = parseOptions(argv, {});
  return formatReport(runs, checkGoals(runs, options.modes), [], options, stores);
}

describe("bench report", () => {
  test("Translation: each API's row minus gateway's, per mode and load, with both throughputs", () => {
    const text = report(["--modes", "json", "--store", "sqlite"], SQLITE);
    const block = text.slice(text.indexOf("Translation"));
    const lines = block.split("\n").slice(1, 4);
    assert.deepEqual(lines, [
      "  json   rate       messages  CPU +60.00 µs/req, p50 +0.25 ms, req/s 500 vs 500",
      "  json   rate       responses CPU -10.00 µs/req, p50 -0.10 ms, req/s 500 vs 500",
      "  json   saturation messages  CPU +20.00 µs/req, p50 +0.50 ms, req/s 1700 vs 1800",
    ]);
    assert.doesNotMatch(text, /Routing/, "no routed rows, no Routing block");
  });

  test("the header names the store and the instances; store CPU is a column on PostgreSQL only", () => {
    const sqlite = report(["--store", "sqlite"], SQLITE);
    assert.match(sqlite, /^Store: sqlite \(SQLite in the run's temp folder\); 1 gateway instance$/m);
    assert.doesNotMatch(sqlite, /store µs\/req/);
    const postgres = report(
      ["--store", "postgres+redis", "--instances", "2"],
      [{ kind: "postgres+redis", description: "PostgreSQL database gw_bench_x", instances: 2 }],
      on("postgres+redis", RUNS),
    );
    assert.match(
      postgres,
      /^Store: postgres\+redis \(PostgreSQL database gw_bench_x\); 2 gateway instances$/m,
    );
    assert.match(postgres, /^ {2}with several instances, the gateway rows' CPU is theirs summed/m);
    const table = postgres.split("\n").filter((l) => l.startsWith("json "));
    assert.match(table[0]!, /\s700\s+900\s+300\s/, "CPU, store CPU, RSS of the gateway's rate row");
  });

  test("several stores: each named in the header, a store column, each gateway against its own store's rows", () => {
    // SQLite's work is in the gateway's own CPU
    const sqlite = RUNS.map(({ storeCpuUsPerReq: _, ...r }) => r);
    const runs = [...sqlite, ...on("postgres+redis", RUNS.slice(0, 2))];
    const text = report(
      ["--modes", "json"],
      [
        SQLITE[0]!,
        { kind: "postgres+redis", description: "PostgreSQL database gw_bench_x, Redis", instances: 1 },
      ],
      runs,
    );
    assert.match(text, /^Stores: sqlite \(SQLite in the run's temp folder\); 1 gateway instance$/m);
    assert.match(
      text,
      /^ {7} postgres\+redis \(PostgreSQL database gw_bench_x, Redis\); 1 gateway instance$/m,
    );
    const rows = text.split("\n").filter((l) => /^json +gateway /.test(l));
    assert.equal(rows.length, 4);
    assert.match(rows[2]!, /^json +gateway +postgres\+redis +500\/s, 50c /);
    assert.match(rows[0]!, /^json +gateway +sqlite +500\/s, 50c .* 700 +— +300 /, "no store CPU on SQLite");
    const translation = text.slice(text.indexOf("Translation")).split("\n").slice(1, 3);
    assert.match(translation[0]!, /^ {2}sqlite json {3}rate {7}messages {2}CPU \+60\.00 µs\/req/);
  });

  test("streams: the gateway's first byte against the pass-through's, a goal line of its own", () => {
    const runs = [
      run("passthrough", "stream", "rate", 300, 21.5, 500, undefined, 21.2),
      run("gateway", "stream", "rate", 600, 23, 500, undefined, 21.9),
      run("passthrough", "json", "rate", 300, 21.5, 500),
      run("gateway", "json", "rate", 600, 23, 500),
    ];
    const goals = checkGoals(runs, ["json", "stream"]);
    assert.equal(goals[0]!.addedFirstByteMs, undefined, "a JSON answer has no first byte to speak of");
    assert.ok(Math.abs(goals[1]!.addedFirstByteMs! - 0.7) < 1e-9);
    const text = formatReport(runs, goals, [], parseOptions(["--store", "sqlite"], {}), SQLITE);
    assert.match(
      text,
      /^ {2}stream gateway first byte vs pass-through: \+0\.70 ms \(p50\) {2}goal ≤ 1 ms {2}ok$/m,
    );
    const slow = checkGoals(
      [runs[0]!, run("gateway", "stream", "rate", 600, 23, 500, undefined, 23.5)],
      ["stream"],
    );
    assert.match(
      formatReport(runs, slow, [], parseOptions(["--store", "sqlite"], {}), SQLITE),
      /first byte .* \+2\.30 ms .*MISSED/,
    );
  });

  test("latency goals: the gateway's p50 and p99 over the pass-through's, the hop over direct alongside", () => {
    const runs = [
      run("direct", "json", "rate", 100, 20.5, 500, undefined, 20.5, 23),
      run("passthrough", "json", "rate", 300, 21, 500, undefined, 21, 27.3),
      run("gateway", "json", "rate", 600, 21.45, 500, undefined, 21.45, 26.7),
    ];
    addLatencyDeltas(runs);
    const text = formatReport(
      runs,
      checkGoals(runs, ["json"]),
      [],
      parseOptions(["--store", "sqlite"], {}),
      SQLITE,
    );
    assert.match(
      text,
      /^ {2}json {3}gateway p50 vs pass-through: \+0\.45 ms {2}goal ≤ 0\.5 ms {2}ok {2}\(over direct: gateway \+0\.95 ms, pass-through \+0\.50 ms\)$/m,
    );
    assert.match(text, /^ {2}json {3}gateway p99 vs pass-through: -0\.60 ms {2}goal ≤ 2 ms {2}ok$/m);
    const slower = [
      runs[0]!,
      runs[1]!,
      run("gateway", "json", "rate", 600, 21.6, 500, undefined, 21.6, 29.5),
    ];
    const missed = formatReport(
      slower,
      checkGoals(slower, ["json"]),
      [],
      parseOptions(["--store", "sqlite"], {}),
      SQLITE,
    );
    assert.match(missed, /p50 vs pass-through: \+0\.60 ms .*MISSED/);
    assert.match(missed, /p99 vs pass-through: \+2\.20 ms .*MISSED/);
  });
});
