// The bench's report: the stores and instances in its header, the store's CPU column on
// PostgreSQL only, the Translation block (messages and responses against gateway), the
// per-store CPU and memory blocks, and the goal lines of issue #32 with their verdicts.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseOptions } from "./options.ts";
import {
  addLatencyDeltas,
  type BenchResults,
  checkGoals,
  formatReport,
  type GatewaySummary,
  type GoalCheck,
  type MemorySummary,
  type StoreSetup,
  summarizeStores,
} from "./report.ts";
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

const SQLITE: StoreSetup = { kind: "sqlite", description: "SQLite in the run's temp folder", instances: 1 };
const SHARED: StoreSetup = {
  kind: "postgres+redis",
  description: "PostgreSQL database gw_bench_x, Redis",
  instances: 1,
};

/** The same runs of the gateway on another store. */
function on(store: StoreKind, runs: RunResult[]): RunResult[] {
  return runs.map((r) => (r.store ? { ...r, store } : r));
}

function memory(peak: number[], idleStart: number[], idleAfter: number[]): MemorySummary {
  return { peakRssMb: peak, idleStartRssMb: idleStart, idleAfterRssMb: idleAfter };
}

function gateway(store: StoreKind, mem = memory([300], [80], [90])): GatewaySummary {
  return { store, memory: mem, logLines: 0, logTail: [] };
}

function results(runs: RunResult[], stores: StoreSetup[], passthrough?: MemorySummary): BenchResults {
  return { runs, stores, gateways: stores.map((s) => gateway(s.kind)), passthrough };
}

function report(argv: string[], stores: StoreSetup[], runs = RUNS): string {
  const options = parseOptions(argv, {});
  const all = results(runs, stores);
  return formatReport(all, checkGoals(all, options.modes), options);
}

/** The goal lines of a report, each as its cells. */
function goalRows(text: string): string[][] {
  const block = text.slice(text.indexOf("Goals (")).split("\n").slice(2);
  return block
    .slice(
      0,
      block.findIndex((l) => !l.startsWith("  ") || /^ {2}\d+ of \d+ met/.test(l)),
    )
    .map((l) => l.trim().split(/\s{2,}/));
}

/** A full run's results: the baselines, the gateway on SQLite and on PostgreSQL with Redis. */
function fullRun(): BenchResults {
  const modes: Mode[] = ["json", "stream", "stream-paced"];
  const runs: RunResult[] = [];
  const each = (
    target: TargetName,
    store: StoreKind | undefined,
    cpu: Record<Mode, [number, number]>,
    storeCpu?: Record<Mode, [number, number]>,
  ) => {
    for (const mode of modes)
      (["rate", "saturation"] as const).forEach((load, i) => {
        const storeUs = storeCpu?.[mode][i];
        const r = run(target, mode, load, cpu[mode][i]!, 21, 500, storeUs);
        // a tenth of the store's CPU in Redis, the rest in PostgreSQL
        const parts =
          storeUs === undefined
            ? {}
            : {
                storeCpuParts: {
                  postgresUsPerReq: storeUs * 0.9,
                  holdsUsPerReq: storeUs * 0.3,
                  redisUsPerReq: storeUs * 0.1,
                },
              };
        runs.push(store ? { ...r, store, ...parts } : r);
      });
  };
  each("passthrough", undefined, { json: [300, 150], stream: [400, 200], "stream-paced": [600, 400] });
  each("gateway", "sqlite", { json: [540, 270], stream: [900, 500], "stream-paced": [1080, 720] });
  each(
    "gateway",
    "postgres+redis",
    { json: [648, 300], stream: [1260, 600], "stream-paced": [1296, 800] },
    { json: [45, 30], stream: [61, 40], "stream-paced": [50, 35] },
  );
  return {
    runs,
    stores: [SQLITE, SHARED],
    gateways: [
      gateway("sqlite", memory([130], [70], [99.6])),
      gateway("postgres+redis", memory([150], [75], [100])),
    ],
    passthrough: memory([100], [45], [60]),
  };
}

describe("bench report", () => {
  test("Translation: each API's row minus gateway's, per mode and load, with both throughputs", () => {
    const text = report(["--modes", "json", "--store", "sqlite"], [SQLITE]);
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
    const sqlite = report(["--store", "sqlite"], [SQLITE]);
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
    const text = report(["--modes", "json"], [SQLITE, SHARED], runs);
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

  test("per store: the gateway's and the store's CPU per call, and each against the pass-through", () => {
    const full = fullRun();
    const text = formatReport(full, checkGoals(full, parseOptions([], {}).modes), parseOptions([], {}));
    const block = text.slice(text.indexOf("Per store:")).split("\n");
    assert.equal(
      block[0],
      "Per store: the gateway target's CPU per call (at 500 req/s; saturation in brackets):",
    );
    const rows = block.slice(1, 8).map((l) => l.trim().split(/\s{2,}/));
    assert.deepEqual(rows[0], [
      "store",
      "mode",
      "gateway µs/call",
      "store µs/call",
      "÷ pass-through",
      "with the store ÷ pass-through",
      "store: PostgreSQL (holds) + Redis",
    ]);
    assert.deepEqual(rows[1], ["sqlite", "json", "540 [270]", "—", "1.80× [1.80×]", "—", "—"]);
    assert.deepEqual(rows[3], ["sqlite", "stream-paced", "1080 [720]", "—", "1.80× [1.80×]", "—", "—"]);
    assert.deepEqual(rows[4], [
      "postgres+redis",
      "json",
      "648 [300]",
      "45 [30]",
      "2.16× [2.00×]",
      "2.31× [2.20×]",
      "41 (holds 14) + 5",
    ]);
  });

  test("memory: each gateway's peak against the pass-through's, and its idle RSS after start-up and after the load", () => {
    const full = fullRun();
    const text = formatReport(full, checkGoals(full, parseOptions([], {}).modes), parseOptions([], {}));
    const block = text.slice(text.indexOf("Memory (")).split("\n");
    const rows = block.slice(1, 5).map((l) => l.trim().split(/\s{2,}/));
    assert.deepEqual(rows, [
      ["process", "peak MB", "÷ pass-through", "idle 10 s after start-up", "idle 40 s after the load"],
      ["pass-through", "100", "45", "60"],
      ["gateway on sqlite", "130", "1.30×", "70", "100"],
      ["gateway on postgres+redis", "150", "1.50×", "75", "100"],
    ]);
    const many: BenchResults = {
      ...full,
      gateways: [gateway("postgres+redis", memory([150, 140], [75, 72], [98, 96]))],
    };
    const summary = summarizeStores(many, ["json"])[0]!;
    assert.deepEqual(
      [summary.instances, summary.peakRssMb, summary.idleStartRssMb, summary.idleAfterRssMb],
      [2, 150, 75, 98],
      "the highest instance's",
    );
    assert.match(
      formatReport(many, [], parseOptions([], {})),
      /^ {2}postgres\+redis, each instance: peak 150, 140 MB; idle 75, 72 MB after start-up, 98, 96 MB after the load$/m,
    );
  });

  test("memory: where each process's memory is once idle after the load, when it was read", () => {
    const parts = (v8: number) => ({ fileMb: 57, v8PagesMb: v8, mallocMainMb: 31, otherAnonMb: 32 });
    const full: BenchResults = {
      ...fullRun(),
      gateways: [gateway("sqlite", { ...memory([300], [80], [90]), idleAfterParts: parts(280) })],
      passthrough: { ...memory([100], [45], [60]), idleAfterParts: parts(156) },
    };
    const text = formatReport(full, [], parseOptions([], {}));
    const block = text.slice(text.indexOf("Where it is")).split("\n");
    assert.deepEqual(
      block.slice(1, 4).map((l) => l.trim().split(/\s{2,}/)),
      [
        ["idle after the load", "file pages", "V8 heap pages", "malloc main arena", "other anonymous"],
        ["pass-through", "57", "156", "31", "32"],
        ["gateway on sqlite", "57", "280", "31", "32"],
      ],
    );
    assert.ok(
      !formatReport(fullRun(), [], parseOptions([], {})).includes("Where it is"),
      "no block without readings",
    );
  });

  test("the goals of issue #32: each with its value, its goal and ✔ or ✖, the saturation run's in brackets", () => {
    const full = fullRun();
    addLatencyDeltas(full.runs);
    const goals = checkGoals(full, ["json", "stream", "stream-paced"]);
    const text = formatReport(full, goals, parseOptions([], {}));
    const rows = goalRows(text);
    const row = (label: string, store: string, mode = "") =>
      rows.find((r) => r[0] === label && r[1] === store && (mode === "" ? r.length < 7 : r[2] === mode));
    assert.deepEqual(row("stores' CPU per call", "postgres+redis", "json"), [
      "stores' CPU per call",
      "postgres+redis",
      "json",
      "45 µs [30 µs]",
      "≤ 60 µs",
      "✔",
    ]);
    assert.equal(row("stores' CPU per call", "postgres+redis", "stream")?.[5], "✖", "61 µs is over 60");
    // 648 ÷ 540 = 1.2; 1260 ÷ 900 = 1.4
    assert.deepEqual(row("gateway CPU per call ÷ its own on SQLite", "postgres+redis", "json")?.slice(3), [
      "1.20× [1.11×]",
      "≤ 1.3×",
      "✔",
    ]);
    assert.equal(row("gateway CPU per call ÷ its own on SQLite", "postgres+redis", "stream")?.[5], "✖");
    // the default path: 540 ÷ 300 = 1.8 (json), 900 ÷ 400 = 2.25 (burst), 1080 ÷ 600 = 1.8 (paced)
    for (const [mode, value, verdict] of [
      ["json", "1.80× [1.80×]", "✔"],
      ["stream", "2.25× [2.50×]", "✖"],
      ["stream-paced", "1.80× [1.80×]", "✔"],
    ] as const)
      assert.deepEqual(row("gateway CPU per call ÷ pass-through", "sqlite", mode)?.slice(3), [
        value,
        "≤ 2×",
        verdict,
      ]);
    assert.equal(
      rows.filter((r) => r[0] === "gateway CPU per call ÷ pass-through").length,
      3,
      "on SQLite only: the default path",
    );
    // idle: under 100 MB, so 100 itself misses; the higher of the two readings is checked
    assert.deepEqual(row("idle RSS (highest instance)", "sqlite")?.slice(2), [
      "100 MB",
      "< 100 MB",
      "✔",
      "after start-up 70 MB, after the load 100 MB",
    ]);
    assert.equal(row("idle RSS (highest instance)", "postgres+redis")?.[4], "✖");
    assert.deepEqual(row("peak RSS ÷ pass-through's", "sqlite")?.slice(2), [
      "1.30×",
      "≤ 1.3×",
      "✔",
      "130 MB ÷ 100 MB",
    ]);
    assert.equal(row("peak RSS ÷ pass-through's", "postgres+redis")?.[4], "✖");
    const met = goals.filter((g) => g.pass).length;
    assert.match(text, new RegExp(`^ {2}${met} of ${goals.length} met$`, "m"));
  });

  test("a goal this run could not measure says why, and is not counted as met or missed", () => {
    const runs = [
      run("passthrough", "json", "rate", 300, 21, 500),
      run("gateway", "json", "rate", 540, 21.3, 500),
    ];
    const sqliteOnly = results(runs, [SQLITE], memory([100], [45], [60]));
    const goals = checkGoals(sqliteOnly, ["json"]);
    const unmeasured = goals.filter((g) => g.pass === undefined);
    assert.deepEqual(
      unmeasured.map((g: GoalCheck) => [g.goal, g.note]),
      [
        ["store-cpu", "no PostgreSQL store in --store"],
        ["vs-sqlite", "no PostgreSQL store in --store"],
      ],
    );
    const text = formatReport(sqliteOnly, goals, parseOptions(["--store", "sqlite"], {}));
    assert.match(text, /^ {2}stores' CPU per call +n\/a +≤ 60 µs +n\/a +no PostgreSQL store in --store$/m);
    // the peak (300 MB against 100) misses; the others are met
    assert.match(
      text,
      new RegExp(`^ {2}${goals.length - 3} of ${goals.length - 2} met; 2 not measured$`, "m"),
    );
    const sharedOnly = results(on("postgres+redis", runs), [SHARED]);
    const shared = checkGoals(sharedOnly, ["json"]);
    assert.equal(shared.find((g) => g.goal === "vs-sqlite")?.note, "no sqlite in --store to compare with");
    assert.equal(shared.find((g) => g.goal === "vs-passthrough")?.note, "no sqlite in --store");
    assert.equal(shared.find((g) => g.goal === "peak-rss")?.note, "no passthrough run");
  });

  test("streams: the gateway's first byte against the pass-through's, a goal line of its own", () => {
    const runs = [
      run("passthrough", "stream", "rate", 300, 21.5, 500, undefined, 21.2),
      run("gateway", "stream", "rate", 600, 23, 500, undefined, 21.9),
      run("passthrough", "json", "rate", 300, 21.5, 500),
      run("gateway", "json", "rate", 600, 23, 500),
    ];
    const all = results(runs, [SQLITE]);
    const goals = checkGoals(all, ["json", "stream"]);
    const firstByte = goals.filter((g) => g.goal === "added-first-byte");
    assert.deepEqual(
      firstByte.map((g) => g.mode),
      ["stream"],
      "a JSON answer has no first byte to speak of",
    );
    assert.ok(Math.abs(firstByte[0]!.value! - 0.7) < 1e-9);
    const text = formatReport(all, goals, parseOptions(["--store", "sqlite"], {}));
    assert.match(text, /^ {2}first byte \(p50\) over pass-through +sqlite +stream +\+0\.70 ms +≤ 1 ms +✔$/m);
    const slow = results(
      [runs[0]!, run("gateway", "stream", "rate", 600, 23, 500, undefined, 23.5)],
      [SQLITE],
    );
    assert.match(
      formatReport(slow, checkGoals(slow, ["stream"]), parseOptions(["--store", "sqlite"], {})),
      /first byte .* \+2\.30 ms +≤ 1 ms +✖/,
    );
  });

  test("latency goals: the gateway's p50 and p99 over the pass-through's, the hop over direct alongside", () => {
    const runs = [
      run("direct", "json", "rate", 100, 20.5, 500, undefined, 20.5, 23),
      run("passthrough", "json", "rate", 300, 21, 500, undefined, 21, 27.3),
      run("gateway", "json", "rate", 600, 21.45, 500, undefined, 21.45, 26.7),
    ];
    addLatencyDeltas(runs);
    const all = results(runs, [SQLITE]);
    const text = formatReport(all, checkGoals(all, ["json"]), parseOptions(["--store", "sqlite"], {}));
    assert.match(
      text,
      /^ {2}p50 over pass-through +sqlite +json +\+0\.45 ms +≤ 0\.5 ms +✔ +over direct: gateway \+0\.95 ms, pass-through \+0\.50 ms$/m,
    );
    assert.match(text, /^ {2}p99 over pass-through +sqlite +json +-0\.60 ms +≤ 2 ms +✔$/m);
    const slower = results(
      [runs[0]!, runs[1]!, run("gateway", "json", "rate", 600, 21.6, 500, undefined, 21.6, 29.5)],
      [SQLITE],
    );
    const missed = formatReport(
      slower,
      checkGoals(slower, ["json"]),
      parseOptions(["--store", "sqlite"], {}),
    );
    assert.match(missed, /p50 over pass-through .* \+0\.60 ms +≤ 0\.5 ms +✖/);
    assert.match(missed, /p99 over pass-through .* \+2\.20 ms +≤ 2 ms +✖/);
  });

  test("the pass-through read again after the gateways: ratios and latency lines take the mean of both readings", () => {
    const runs = [
      run("direct", "json", "rate", 100, 20.5, 500, undefined, 20.5, 23),
      run("passthrough", "json", "rate", 300, 21, 500, undefined, 21, 27),
      run("gateway", "json", "rate", 600, 21.6, 500, undefined, 21.6, 28),
      { ...run("passthrough", "json", "rate", 200, 21.2, 500, undefined, 21.2, 26), again: true as const },
    ];
    addLatencyDeltas(runs);
    const all = results(runs, [SQLITE]);
    const text = formatReport(all, checkGoals(all, ["json"]), parseOptions(["--store", "sqlite"], {}));
    // 600 ÷ 250, not 600 ÷ 300 (the first reading alone) nor ÷ 200 (the second)
    assert.match(text, /^ {2}gateway CPU per call ÷ pass-through +sqlite +json +2\.40× +≤ 2× +✖$/m);
    assert.match(
      text,
      /^ {2}p50 over pass-through +sqlite +json +\+0\.50 ms +≤ 0\.5 ms +✔ +over direct: gateway \+1\.10 ms, pass-through \+0\.60 ms$/m,
    );
    assert.match(text, /^ {2}p99 over pass-through +sqlite +json +\+1\.50 ms/m);
    assert.match(text, /^ {2}json 300, 200 µs$/m, "both readings shown");
    assert.match(text, /^json +passthrough again +/m, "the second reading's row is named in the table");
  });

  test("the other load of the runs: its average and its most, with a warning above 0.15 cores", () => {
    const quiet = report(["--store", "sqlite"], [SQLITE]);
    assert.match(quiet, /^Other load: 0\.00 cores on average over the runs, 0\.00 at most\.$/m);
    assert.doesNotMatch(quiet, /WARNING: other processes/);
    const busy = RUNS.map((r, i) => ({ ...r, otherLoadCores: i === 0 ? 0.5 : 0 }));
    const text = report(["--store", "sqlite"], [SQLITE], busy);
    assert.match(text, /^Other load: 0\.10 cores on average over the runs, 0\.50 at most\.$/m);
    assert.match(text, /^WARNING: other processes kept up to 0\.50 cores busy/m);
  });
});
