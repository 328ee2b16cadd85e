// Turns the runs into the printed table, the goal checks and the JSON written to .bench/.
import type { BenchOptions } from "./options.ts";
import type { MemoryParts } from "./proc-stats.ts";
import {
  isStream,
  type LoadKind,
  type Mode,
  type RunResult,
  type StoreKind,
  type TargetName,
} from "./types.ts";

/**
 * The goals of issue #32, at the fixed rate: the shared stores' CPU per call; the gateway on
 * them against itself on SQLite; the default path (SQLite) against the pass-through, for JSON
 * and for burst and paced streams; an idle instance's memory, and the peak under load against
 * the pass-through's. And the latency the gateway adds over the pass-through (its p50, its p99
 * and a stream's first byte), from the issue before it.
 */
export const GOALS = {
  storeCpuUs: 60,
  vsSqlite: 1.3,
  vsPassthrough: 2,
  idleRssMb: 100,
  peakRssRatio: 1.3,
  addedP50Ms: 0.5,
  addedP99Ms: 2,
  addedFirstByteMs: 1,
} as const;

/** How long a process is left without requests after start-up before its idle memory is read. */
export const IDLE_SECONDS = 10;
/**
 * How long after its last run: past the 30 s after which an idle gateway gives back what a
 * burst grew it to (src/lib/idle-memory.ts, decision 0041).
 */
export const IDLE_AFTER_SECONDS = 40;

/** A fixed-rate run that reached less than this share of its rate did not test that rate. */
const RATE_REACHED = 0.97;
/** Cores of CPU used outside the benchmark above which a run's numbers are called disturbed. */
const DISTURBED_CORES = 0.15;

/** Resident memory of a server's processes (one entry per gateway instance), MB. */
export interface MemorySummary {
  /** the peak over the whole bench (VmHWM) */
  peakRssMb: number[];
  /** IDLE_SECONDS after start-up, before any request */
  idleStartRssMb: number[];
  /** IDLE_AFTER_SECONDS after its last measured run */
  idleAfterRssMb: number[];
  /** where the memory of the instance highest then is (see MemoryParts) */
  idleAfterParts?: MemoryParts | undefined;
}

/** One store's gateway: its memory, and what it logged at its log level. */
export interface GatewaySummary {
  store: StoreKind;
  memory: MemorySummary;
  logLines: number;
  logTail: string[];
}

/** A store the gateway ran on: what it is (no credentials), and how many instances shared it. */
export interface StoreSetup {
  kind: StoreKind;
  description: string;
  instances: number;
}

/** Everything a run measured, from which the report and .bench/last.json are made. */
export interface BenchResults {
  runs: RunResult[];
  stores: StoreSetup[];
  gateways: GatewaySummary[];
  /** the pass-through's memory, when it ran */
  passthrough?: MemorySummary | undefined;
}

/** A number at the fixed rate, and at saturation for context. */
export interface AtLoads {
  rate?: number | undefined;
  saturation?: number | undefined;
}

/** Per store, per mode: what the gateway target cost per call, and against the pass-through. */
export interface StoreModeSummary {
  mode: Mode;
  /** the gateway processes' CPU, µs per call */
  gatewayCpuUs: AtLoads;
  /** the store's processes' CPU, µs per call (PostgreSQL stores) */
  storeCpuUs: AtLoads;
  /** its parts at the fixed rate: PostgreSQL's backends, the Redis server */
  storeCpuParts?: RunResult["storeCpuParts"] | undefined;
  /** gatewayCpuUs ÷ the pass-through's */
  vsPassthrough: AtLoads;
  /** (gatewayCpuUs + storeCpuUs) ÷ the pass-through's: the whole cost of a call on this store */
  withStoreVsPassthrough: AtLoads;
}

export interface StoreSummary {
  store: StoreKind;
  instances: number;
  modes: StoreModeSummary[];
  /** of the highest instance */
  peakRssMb: number;
  /** peakRssMb ÷ the pass-through's */
  peakVsPassthrough?: number | undefined;
  idleStartRssMb: number;
  idleAfterRssMb: number;
}

export type GoalName =
  | "store-cpu"
  | "vs-sqlite"
  | "vs-passthrough"
  | "idle-rss"
  | "peak-rss"
  | "added-p50"
  | "added-p99"
  | "added-first-byte";

/** One goal line: the measured value against the goal, or why it could not be measured. */
export interface GoalCheck {
  goal: GoalName;
  store?: StoreKind;
  mode?: Mode;
  /** at the fixed rate; memory: of the highest instance */
  value?: number | undefined;
  saturation?: number | undefined;
  limit: number;
  /** met, missed, or undefined: not measured in this run */
  pass?: boolean | undefined;
  /** context (what the value is made of), or why it was not measured */
  note?: string | undefined;
}

/** How each goal reads: its label, the unit of its value, and whether it must stay under its limit. */
const GOAL_TEXT: Record<GoalName, { label: string; unit: "µs" | "×" | "MB" | "ms"; under?: true }> = {
  "store-cpu": { label: "stores' CPU per call", unit: "µs" },
  "vs-sqlite": { label: "gateway CPU per call ÷ its own on SQLite", unit: "×" },
  "vs-passthrough": { label: "gateway CPU per call ÷ pass-through", unit: "×" },
  "idle-rss": { label: "idle RSS (highest instance)", unit: "MB", under: true },
  "peak-rss": { label: "peak RSS ÷ pass-through's", unit: "×" },
  "added-p50": { label: "p50 over pass-through", unit: "ms" },
  "added-p99": { label: "p99 over pass-through", unit: "ms" },
  "added-first-byte": { label: "first byte (p50) over pass-through", unit: "ms" },
};

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

function divide(a: number | undefined, b: number | undefined): number | undefined {
  return a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
}

function highest(values: number[]): number {
  return values.length ? Math.max(...values) : 0;
}

/** A number of the gateway target's runs on a store at both loads. */
function atLoads(
  runs: RunResult[],
  mode: Mode,
  store: StoreKind,
  value: (run: RunResult) => number | undefined,
): AtLoads {
  const of = (load: LoadKind) => {
    const run = find(runs, mode, "gateway", load, store);
    return run && value(run);
  };
  return { rate: of("rate"), saturation: of("saturation") };
}

/** The pass-through's readings of a mode and load: before the gateways and, after them, again. */
function passthroughRuns(runs: RunResult[], mode: Mode, load: LoadKind): RunResult[] {
  return runs.filter((r) => r.mode === mode && r.target === "passthrough" && r.load === load);
}

function mean(values: number[]): number | undefined {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : undefined;
}

/** A number of the pass-through at both loads, the mean of its readings: what ratios divide by. */
function passthroughAtLoads(runs: RunResult[], mode: Mode, value: (run: RunResult) => number): AtLoads {
  const of = (load: LoadKind) => mean(passthroughRuns(runs, mode, load).map(value));
  return { rate: of("rate"), saturation: of("saturation") };
}

function ratios(a: AtLoads, b: AtLoads): AtLoads {
  return { rate: divide(a.rate, b.rate), saturation: divide(a.saturation, b.saturation) };
}

/** Per store: the gateway target's CPU per call, the store's, their ratios to the pass-through; memory. */
export function summarizeStores(results: BenchResults, modes: Mode[]): StoreSummary[] {
  const { runs, passthrough } = results;
  const passthroughPeak = passthrough && highest(passthrough.peakRssMb);
  return results.gateways.map(({ store, memory }) => {
    const peakRssMb = highest(memory.peakRssMb);
    return {
      store,
      instances: memory.peakRssMb.length,
      modes: modes.map((mode) => {
        const gatewayCpuUs = atLoads(runs, mode, store, (r) => r.cpuUsPerReq);
        const storeCpuUs = atLoads(runs, mode, store, (r) => r.storeCpuUsPerReq);
        const passthroughCpu = passthroughAtLoads(runs, mode, (r) => r.cpuUsPerReq);
        const sum = (load: keyof AtLoads) =>
          storeCpuUs[load] === undefined ? undefined : (gatewayCpuUs[load] ?? 0) + storeCpuUs[load]!;
        return {
          mode,
          gatewayCpuUs,
          storeCpuUs,
          storeCpuParts: find(runs, mode, "gateway", "rate", store)?.storeCpuParts,
          vsPassthrough: ratios(gatewayCpuUs, passthroughCpu),
          withStoreVsPassthrough: ratios(
            { rate: sum("rate"), saturation: sum("saturation") },
            passthroughCpu,
          ),
        };
      }),
      peakRssMb,
      peakVsPassthrough: divide(peakRssMb, passthroughPeak),
      idleStartRssMb: highest(memory.idleStartRssMb),
      idleAfterRssMb: highest(memory.idleAfterRssMb),
    };
  });
}

function check(
  goal: GoalName,
  limit: number,
  value: AtLoads | number | undefined,
  where: { store?: StoreKind | undefined; mode?: Mode; note?: string | undefined },
): GoalCheck {
  const { rate, saturation } = typeof value === "object" ? value : { rate: value, saturation: undefined };
  const met = rate === undefined ? undefined : GOAL_TEXT[goal].under ? rate < limit : rate <= limit;
  return {
    goal,
    ...(where.store ? { store: where.store } : {}),
    ...(where.mode ? { mode: where.mode } : {}),
    value: rate,
    ...(saturation === undefined ? {} : { saturation }),
    limit,
    pass: met,
    ...(where.note ? { note: where.note } : rate === undefined ? { note: "not measured" } : {}),
  };
}

/** The shared stores' goals, on every store but SQLite; one line saying why when there is none. */
function sharedStoreGoals(summaries: StoreSummary[], modes: Mode[]): GoalCheck[] {
  const shared = summaries.filter((s) => s.store !== "sqlite");
  const sqlite = summaries.find((s) => s.store === "sqlite");
  if (shared.length === 0)
    return (["store-cpu", "vs-sqlite"] as const).map((goal) =>
      check(goal, goal === "store-cpu" ? GOALS.storeCpuUs : GOALS.vsSqlite, undefined, {
        note: "no PostgreSQL store in --store",
      }),
    );
  return [
    ...shared.flatMap(({ store, modes: rows }) =>
      rows.map((row) => check("store-cpu", GOALS.storeCpuUs, row.storeCpuUs, { store, mode: row.mode })),
    ),
    ...shared.flatMap(({ store, modes: rows }) =>
      modes.map((mode) => {
        const own = rows.find((r) => r.mode === mode)?.gatewayCpuUs;
        const onSqlite = sqlite?.modes.find((r) => r.mode === mode)?.gatewayCpuUs;
        return check("vs-sqlite", GOALS.vsSqlite, own && onSqlite && ratios(own, onSqlite), {
          store,
          mode,
          note: sqlite ? undefined : "no sqlite in --store to compare with",
        });
      }),
    ),
  ];
}

/** The gateway's latency over the pass-through's at the fixed rate, per store and mode. */
function latencyGoals(runs: RunResult[], store: StoreKind, mode: Mode): GoalCheck[] {
  const gateway = find(runs, mode, "gateway", "rate", store);
  const readings = passthroughRuns(runs, mode, "rate");
  const over = (value: (r: RunResult) => number) => {
    const passthrough = mean(readings.map(value));
    return gateway && passthrough !== undefined ? value(gateway) - passthrough : undefined;
  };
  const passthroughAdded = mean(readings.flatMap((r) => (r.addedP50Ms === undefined ? [] : [r.addedP50Ms])));
  const hops =
    gateway?.addedP50Ms === undefined
      ? undefined
      : `over direct: gateway ${signed(gateway.addedP50Ms)} ms, pass-through ${signed(passthroughAdded)} ms`;
  return [
    check(
      "added-p50",
      GOALS.addedP50Ms,
      over((r) => r.latencyMs.p50),
      { store, mode, note: hops },
    ),
    check(
      "added-p99",
      GOALS.addedP99Ms,
      over((r) => r.latencyMs.p99),
      { store, mode },
    ),
    ...(isStream(mode)
      ? [
          check(
            "added-first-byte",
            GOALS.addedFirstByteMs,
            over((r) => r.firstByteMs.p50),
            { store, mode },
          ),
        ]
      : []),
  ];
}

export function checkGoals(results: BenchResults, modes: Mode[]): GoalCheck[] {
  const summaries = summarizeStores(results, modes);
  const sqlite = summaries.find((s) => s.store === "sqlite");
  const stores = summaries.map((s) => s.store);
  return [
    ...sharedStoreGoals(summaries, modes),
    ...(sqlite
      ? sqlite.modes.map((row) =>
          check("vs-passthrough", GOALS.vsPassthrough, row.vsPassthrough, {
            store: "sqlite",
            mode: row.mode,
          }),
        )
      : [check("vs-passthrough", GOALS.vsPassthrough, undefined, { note: "no sqlite in --store" })]),
    ...summaries.map((s) =>
      check("idle-rss", GOALS.idleRssMb, Math.max(s.idleStartRssMb, s.idleAfterRssMb), {
        store: s.store,
        note: `after start-up ${s.idleStartRssMb.toFixed(0)} MB, after the load ${s.idleAfterRssMb.toFixed(0)} MB`,
      }),
    ),
    ...summaries.map((s) =>
      check("peak-rss", GOALS.peakRssRatio, s.peakVsPassthrough, {
        store: s.store,
        note: results.passthrough
          ? `${s.peakRssMb.toFixed(0)} MB ÷ ${highest(results.passthrough.peakRssMb).toFixed(0)} MB`
          : "no passthrough run",
      }),
    ),
    ...stores.flatMap((store) => modes.flatMap((mode) => latencyGoals(results.runs, store, mode))),
  ];
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
  { heading: "target", cell: (r) => (r.again ? `${r.target} again` : r.target) },
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

/** Lines of aligned columns: the first `left` left-aligned, the others right-aligned. */
function columns(rows: string[][], left: (i: number) => boolean, indent = ""): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map(
    (cells) =>
      indent +
      cells
        .map((c, i) => (left(i) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
        .join("  ")
        .trimEnd(),
  );
}

function table(runs: RunResult[], options: BenchOptions): string {
  const shown = {
    stores: options.stores.length > 1,
    storeCpu: options.stores.some((s) => s !== "sqlite"),
  };
  const cols = COLUMNS.filter((c) => !c.only || shown[c.only]);
  const rows = [cols.map((c) => c.heading), ...runs.map((run) => cols.map((c) => c.cell(run)))];
  const [header, ...lines] = columns(rows, (i) => TEXT_COLUMNS.has(cols[i]!.heading));
  return [header!, "-".repeat(header!.length), ...lines].join("\n");
}

/** A number at the fixed rate, with the saturation run's in brackets. */
function atBoth(value: AtLoads, format: (n: number | undefined) => string): string {
  if (value.rate === undefined && value.saturation === undefined) return "—";
  return `${format(value.rate)} [${format(value.saturation)}]`;
}

function times(value: number | undefined): string {
  return value === undefined ? "—" : `${value.toFixed(2)}×`;
}

/** The store's CPU per call at the fixed rate, PostgreSQL's (the holds' part of it) and Redis's. */
function parts(value: StoreModeSummary["storeCpuParts"]): string {
  if (!value) return "—";
  const holds = value.holdsUsPerReq === undefined ? "" : ` (holds ${value.holdsUsPerReq.toFixed(0)})`;
  return `${value.postgresUsPerReq.toFixed(0)}${holds} + ${value.redisUsPerReq.toFixed(0)}`;
}

/** Per store: the gateway target's CPU per call, the store's, their ratios to the pass-through. */
function storeCpuLines(summaries: StoreSummary[], options: BenchOptions): string[] {
  if (summaries.length === 0) return [];
  const shared = summaries.some((s) => s.store !== "sqlite");
  const rows = [
    [
      "store",
      "mode",
      "gateway µs/call",
      ...(shared ? ["store µs/call"] : []),
      "÷ pass-through",
      ...(shared ? ["with the store ÷ pass-through", "store: PostgreSQL (holds) + Redis"] : []),
    ],
    ...summaries.flatMap((s) =>
      s.modes.map((m) => [
        s.store,
        m.mode,
        atBoth(m.gatewayCpuUs, (n) => fixed(n, 0)),
        ...(shared ? [atBoth(m.storeCpuUs, (n) => fixed(n, 0))] : []),
        atBoth(m.vsPassthrough, times),
        ...(shared ? [atBoth(m.withStoreVsPassthrough, times), parts(m.storeCpuParts)] : []),
      ]),
    ),
  ];
  return [
    `Per store: the gateway target's CPU per call (at ${options.rate} req/s; saturation in brackets):`,
    ...columns(rows, (i) => i < 2, "  "),
    "",
  ];
}

/** The pass-through's CPU per call in each mode, read before the gateways and after them. */
function passthroughLines(runs: RunResult[], modes: Mode[]): string[] {
  const readings = modes
    .map((mode) => [mode, passthroughRuns(runs, mode, "rate")] as const)
    .filter(([, runs]) => runs.length > 0);
  if (!readings.some(([, runs]) => runs.length > 1)) return [];
  return [
    "The pass-through's CPU per call at the fixed rate, before the gateways and after them (÷ pass-through divides by their mean):",
    `  ${readings.map(([mode, runs]) => `${mode} ${runs.map((r) => r.cpuUsPerReq.toFixed(0)).join(", ")} µs`).join("; ")}`,
    "",
  ];
}

/** Peak and idle memory of the pass-through and of each store's gateway. */
function memoryLines(results: BenchResults, summaries: StoreSummary[]): string[] {
  if (summaries.length === 0 && !results.passthrough) return [];
  const mb = (n: number | undefined) => fixed(n, 0);
  const { passthrough } = results;
  const rows = [
    [
      "process",
      "peak MB",
      "÷ pass-through",
      `idle ${IDLE_SECONDS} s after start-up`,
      `idle ${IDLE_AFTER_SECONDS} s after the load`,
    ],
    ...(passthrough
      ? [
          [
            "pass-through",
            mb(highest(passthrough.peakRssMb)),
            "",
            mb(highest(passthrough.idleStartRssMb)),
            mb(highest(passthrough.idleAfterRssMb)),
          ],
        ]
      : []),
    ...summaries.map((s) => [
      `gateway on ${s.store}`,
      mb(s.peakRssMb),
      times(s.peakVsPassthrough),
      mb(s.idleStartRssMb),
      mb(s.idleAfterRssMb),
    ]),
  ];
  const instances = results.gateways
    .filter((g) => g.memory.peakRssMb.length > 1)
    .map(
      (g) =>
        `  ${g.store}, each instance: peak ${g.memory.peakRssMb.map(mb).join(", ")} MB; ` +
        `idle ${g.memory.idleStartRssMb.map(mb).join(", ")} MB after start-up, ${g.memory.idleAfterRssMb.map(mb).join(", ")} MB after the load`,
    );
  const parts = [
    ...(passthrough?.idleAfterParts ? [["pass-through", passthrough.idleAfterParts] as const] : []),
    ...results.gateways.flatMap((g) =>
      g.memory.idleAfterParts ? [[`gateway on ${g.store}`, g.memory.idleAfterParts] as const] : [],
    ),
  ];
  const partRows = [
    ["idle after the load", "file pages", "V8 heap pages", "malloc main arena", "other anonymous"],
    ...parts.map(([name, p]) => [name, mb(p.fileMb), mb(p.v8PagesMb), mb(p.mallocMainMb), mb(p.otherAnonMb)]),
  ];
  return [
    "Memory (RSS; peak over the whole bench, VmHWM; a gateway's of its highest instance):",
    ...columns(rows, (i) => i === 0, "  "),
    ...instances,
    ...(parts.length
      ? [
          "",
          "Where it is (MB, /proc/<pid>/smaps; see bench/proc-stats.ts):",
          ...columns(partRows, (i) => i === 0, "  "),
        ]
      : []),
    "",
  ];
}

function goalValue(goal: GoalName, value: number | undefined): string {
  if (value === undefined) return "n/a";
  switch (GOAL_TEXT[goal].unit) {
    case "µs":
      return `${value.toFixed(0)} µs`;
    case "×":
      return `${value.toFixed(2)}×`;
    case "MB":
      return `${value.toFixed(0)} MB`;
    case "ms":
      return `${signed(value)} ms`;
  }
}

function goalLimit(goal: GoalName, limit: number): string {
  const { unit, under } = GOAL_TEXT[goal];
  return `${under ? "<" : "≤"} ${limit}${unit === "×" ? "×" : ` ${unit}`}`;
}

function verdict(pass: boolean | undefined): string {
  return pass === undefined ? "n/a" : pass ? "✔" : "✖";
}

function goalLines(goals: GoalCheck[], options: BenchOptions): string[] {
  if (goals.length === 0) return [];
  const rows = [
    ["goal", "store", "mode", "measured", "goal", "", ""],
    ...goals.map((g) => [
      GOAL_TEXT[g.goal].label,
      g.store ?? "",
      g.mode ?? "",
      goalValue(g.goal, g.value) +
        (g.saturation === undefined ? "" : ` [${goalValue(g.goal, g.saturation)}]`),
      goalLimit(g.goal, g.limit),
      verdict(g.pass),
      g.note ?? "",
    ]),
  ];
  const met = goals.filter((g) => g.pass === true).length;
  const measured = goals.filter((g) => g.pass !== undefined).length;
  return [
    `Goals (at the fixed rate, ${options.rate} req/s; saturation in brackets):`,
    ...columns(rows, (i) => i !== 3, "  "),
    `  ${met} of ${measured} met` +
      (measured < goals.length ? `; ${goals.length - measured} not measured` : ""),
    "",
  ];
}

function gatewayLines(gateways: GatewaySummary[]): string[] {
  const several = gateways.length > 1;
  return gateways.flatMap((gateway) => {
    if (gateway.logLines === 0) return [];
    const name = several ? `Gateway on ${gateway.store}` : "Gateway";
    return [
      `${name} wrote ${gateway.logLines} log lines at its log level; the last ones:`,
      ...gateway.logTail.slice(-5).map((l) => `  ${l.slice(0, 300)}`),
    ];
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

/** How busy the machine was with others' work during the runs, and a warning when too busy. */
function otherLoadLines(runs: RunResult[]): string[] {
  if (runs.length === 0) return [];
  const loads = runs.map((r) => r.otherLoadCores);
  const worst = Math.max(...loads);
  const mean = loads.reduce((a, b) => a + b, 0) / loads.length;
  return [
    `Other load: ${mean.toFixed(2)} cores on average over the runs, ${worst.toFixed(2)} at most.`,
    ...(worst < DISTURBED_CORES
      ? []
      : [
          `WARNING: other processes kept up to ${worst.toFixed(2)} cores busy during the runs ("other load"):`,
          "  those numbers are disturbed; run again on a quiet machine.",
        ]),
  ];
}

export function formatReport(results: BenchResults, goals: GoalCheck[], options: BenchOptions): string {
  const { runs } = results;
  const failed = failures(runs);
  const summaries = summarizeStores(results, options.modes);
  return [
    ...storeLines(results.stores),
    ...(options.provider === "openai"
      ? []
      : [
          `Upstream: the ${options.provider} mock; the gateway alone is measured, so its CPU µs/req is the`,
          "gateway's whole cost per request with this provider's translation (compare with --provider openai).",
          "",
        ]),
    table(runs, options),
    "",
    ...routingLines(runs, options.modes),
    ...translationLines(runs, options.modes),
    ...storeCpuLines(summaries, options),
    ...passthroughLines(runs, options.modes),
    ...memoryLines(results, summaries),
    ...goalLines(goals, options),
    ...gatewayLines(results.gateways),
    ...otherLoadLines(runs),
    failed > 0
      ? `WARNING: ${failed} requests failed (errors + non-2xx): the numbers above are not a clean run.`
      : "All requests answered 2xx.",
  ].join("\n");
}
