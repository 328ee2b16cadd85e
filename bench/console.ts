// `npm run bench:console`: the console API on a large store. Seeds 1,000,000 call records
// over 100 accounts (bench/console-seed.ts), starts the gateway on it as its own process,
// logs in as the owner of a big and of a small account and as an admin, and measures every
// read call of docs/console-api.md from a separate load process (bench/console-load.ts);
// then runs retention once and measures the views again. See bench/README.md.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { sql } from "kysely";
import { stringify } from "yaml";
import { configSchema } from "../src/config/cross-check.ts";
import { utcDay } from "../src/records/days.ts";
import { pruneRecords, type RetentionCounts } from "../src/retention/retention.ts";
import { gatewayConfig } from "./console-data.ts";
import type { CallResult, LoadCall, LoadPlan } from "./console-load.ts";
import { type ConsoleBenchOptions, parseOptions, USAGE } from "./console-options.ts";
import { failedCalls, formatPhase, type Phase, slowCalls } from "./console-report.ts";
import {
  type BenchUser,
  checkSeed,
  openTarget,
  type SeedCheck,
  type SeedSummary,
  type StoreTarget,
} from "./console-seed.ts";
import { describeTarget, type PreparedStore, prepareStore } from "./console-store.ts";
import { dropTemporaryDatabases } from "./databases.ts";
import { statusKb } from "./proc-stats.ts";
import { killAllNow, runToEnd, type ServerProcess, startServer, stopAll } from "./processes.ts";
import { ROOT } from "./servers.ts";

const GATEWAY_SCRIPT = join(ROOT, "src/main.ts");
const LOAD_SCRIPT = join(ROOT, "bench/console-load.ts");
const OUT_DIR = join(ROOT, ".bench");
/** unmeasured requests per call between the first (cold) one and the measured runs */
const WARMUP = 3;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

const fmt = (n: number) => n.toLocaleString("en-US");

// ---------------------------------------------------------------------------
// Clean-up: whatever happens, the gateway stops, the temp folder and the run's database go
// ---------------------------------------------------------------------------

let workDir: string | undefined;
let cleaning: Promise<void> | undefined;

function cleanUp(): Promise<void> {
  cleaning ??= stopAll()
    .then(dropTemporaryDatabases)
    .finally(() => {
      if (workDir) rmSync(workDir, { recursive: true, force: true });
    });
  return cleaning;
}

function onSignal(signal: NodeJS.Signals): void {
  log(`\n${signal}: stopping the benchmark…`);
  void cleanUp().finally(() => process.exit(130));
}

// ---------------------------------------------------------------------------
// Seeding
// ---------------------------------------------------------------------------

function printSeed(summary: SeedSummary, check: SeedCheck, store: PreparedStore): void {
  const { counts, timingsMs } = summary;
  const total = Object.values(timingsMs).reduce((a, b) => a + b, 0);
  const lines = [
    `store: ${describeTarget(store.target)}${store.seeded ? "" : ` (copy of ${store.keptAt})`}`,
    `seeded: ${fmt(counts.records)} records (${fmt(counts.recordsToday)} today), ${counts.accounts} accounts, ` +
      `${counts.keys} keys, ${fmt(counts.dailyUsageRows)} daily_usage rows, ${counts.users} users, ` +
      `${counts.tickets} tickets (${counts.ticketMessages} messages)`,
    `${store.seeded ? "seed time" : `seeded ${new Date(summary.now).toISOString()} in`}: ${(total / 1000).toFixed(1)} s (${Object.entries(
      timingsMs,
    )
      .map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`)
      .join(", ")})`,
    `big account ${summary.big.name}: ${fmt(summary.big.records)} records, ${summary.big.keys.length} keys; ` +
      `small account ${summary.small.name}: ${fmt(summary.small.records)} records`,
    `check (${(check.ms / 1000).toFixed(1)} s): ${fmt(check.records)} records, ${fmt(check.recordsToday)} today, ` +
      `${fmt(check.zeroTokenRecords)} with 0 tokens (${((100 * check.zeroTokenRecords) / check.records).toFixed(1)} %); ` +
      `counters off: ${check.accountsOff} accounts, ${check.keysOff} keys; daily_usage off: ${check.dailyOff} accounts, ` +
      `today's calls ${check.todayCallsOff}`,
  ];
  for (const line of lines) log(line);
}

function seedIsConsistent(summary: SeedSummary, check: SeedCheck): boolean {
  return (
    check.records === summary.counts.records &&
    check.accountsOff === 0 &&
    check.keysOff === 0 &&
    check.dailyOff === 0 &&
    check.todayCallsOff === 0
  );
}

// ---------------------------------------------------------------------------
// The gateway on the seeded store, and its sessions
// ---------------------------------------------------------------------------

interface RunningGateway {
  origin: string;
  server: ServerProcess;
}

/** `node src/main.ts serve --json` on the store, with its own config and only its own store's env. */
async function startGateway(target: StoreTarget, dir: string, logLevel: string): Promise<RunningGateway> {
  const store = target.kind === "sqlite" ? { data_dir: target.dataDir } : { database_url: target.url };
  const config = join(dir, "gateway.yaml");
  writeFileSync(config, stringify(gatewayConfig(store, logLevel)));
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  delete env.GATEWAY_DATA_DIR;
  Object.assign(env, { GATEWAY_CONFIG: config, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: logLevel });
  if (target.kind === "sqlite") env.GATEWAY_DATA_DIR = target.dataDir;
  else env.DATABASE_URL = target.url;
  const server = await startServer("gateway", [GATEWAY_SCRIPT, "serve", "--json"], env, 60_000);
  return { origin: new URL(String(server.info.url)).origin, server };
}

/** Logs in (a POST: it carries the gateway's own Origin) and returns the `gw_session=…` cookie. */
async function login(origin: string, user: BenchUser): Promise<string> {
  const res = await fetch(`${origin}/api/console/login`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ email: user.email, password: user.password }),
  });
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0]!)
    .find((c) => c.startsWith("gw_session="));
  if (res.status !== 200 || !cookie)
    throw new Error(`login as ${user.email} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return cookie;
}

async function getJson<T>(origin: string, path: string, cookie: string): Promise<T> {
  const res = await fetch(`${origin}${path}`, { headers: { cookie } });
  if (res.status !== 200)
    throw new Error(`GET ${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as T;
}

/** The cursor `depth` records into a view, walking it in pages of up to 500; null past its end. */
async function cursorAt(origin: string, cookie: string, view: string, depth: number): Promise<string | null> {
  let before: string | null = null;
  for (let left = depth; left > 0; ) {
    const limit = Math.min(500, left);
    const cursor: string = before ? `&before=${encodeURIComponent(before)}` : "";
    const page = await getJson<{ data: unknown[]; next_before: string | null }>(
      origin,
      `/api/console/records?view=${view}&limit=${limit}${cursor}`,
      cookie,
    );
    left -= page.data.length;
    before = page.next_before;
    if (!before) return null;
  }
  return before;
}

// ---------------------------------------------------------------------------
// The plan: every read call of docs/console-api.md, as a big and a small owner and an admin
// ---------------------------------------------------------------------------

interface Sessions {
  big: string;
  small: string;
  admin: string;
}

type PlannedCall = LoadCall & {
  /** measured again after retention (the calls that read call records) */
  view: boolean;
};

async function accountCalls(
  who: "big" | "small",
  cookie: string,
  origin: string,
  keys: string[],
  options: ConsoleBenchOptions,
): Promise<PlannedCall[]> {
  const overview = await getJson<{ today: { calls: number } }>(origin, "/api/console/overview", cookie);
  // A page in the middle of today's records, and the second half of the year view.
  const todayCursor = await cursorAt(origin, cookie, "today", Math.floor(overview.today.calls / 2));
  const yearCursor = await cursorAt(origin, cookie, "year", 500);
  const quietKey = keys.at(-1)!;
  const n = options.requests;
  const exportsN = Math.max(10, Math.ceil(n / 10));
  const c = (what: string, path: string, view: boolean, kind: LoadCall["kind"] = "json"): PlannedCall => ({
    id: `${who} ${what}`,
    path: `/api/console${path}`,
    cookie,
    kind,
    requests: kind === "json" ? n : exportsN,
    view,
  });
  // The cursors are taken on the store as seeded; after retention they still point at kept
  // records (today's are all kept, and so are each account's newest 1000 consumption records).
  const todayPage = todayCursor && `&before=${encodeURIComponent(todayCursor)}`;
  const yearPage = yearCursor && `&before=${encodeURIComponent(yearCursor)}`;
  return [
    c("me", "/me", false),
    c("overview", "/overview", true),
    c("keys", "/keys", false),
    c("models", "/models", false),
    c("plans", "/plans", false),
    c("records today", "/records?view=today", true),
    ...(todayPage ? [c("records today, middle page", `/records?view=today${todayPage}`, true)] : []),
    c("records today, status=error", "/records?view=today&status=error", true),
    c("records year", "/records?view=year", true),
    c("records year, quiet key", `/records?view=year&key=${quietKey}`, true),
    c("records year, status=client_disconnect", "/records?view=year&status=client_disconnect", true),
    ...(yearPage ? [c("records year, page 501+", `/records?view=year${yearPage}`, true)] : []),
    c("tickets", "/tickets", false),
    ...["today", "year"].flatMap((view) =>
      ["csv", "jsonl"].map((format) =>
        c(`export ${view} ${format}`, `/records/export?view=${view}&format=${format}`, true, "export"),
      ),
    ),
  ];
}

async function planCalls(
  origin: string,
  sessions: Sessions,
  summary: SeedSummary,
  options: ConsoleBenchOptions,
): Promise<PlannedCall[]> {
  const n = options.requests;
  const admin = (what: string, path: string, view = false): PlannedCall => ({
    id: `admin ${what}`,
    path: `/api/console${path}`,
    cookie: sessions.admin,
    kind: "json",
    requests: n,
    view,
  });
  return [
    ...(await accountCalls("big", sessions.big, origin, summary.big.keys, options)),
    ...(await accountCalls("small", sessions.small, origin, summary.small.keys, options)),
    admin("me", "/me"),
    admin("accounts", "/admin/accounts"),
    admin("users", "/admin/users"),
    admin("tickets (every account)", "/tickets"),
    admin("overview of big", `/overview?account=${summary.big.id}`, true),
    admin("records today of big", `/records?view=today&account=${summary.big.id}`, true),
  ];
}

// ---------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------

async function countRecords(target: StoreTarget): Promise<number> {
  const store = openTarget(target);
  try {
    const { rows } = await sql<{ n: unknown }>`select count(*) as n from call_records`.execute(store.db);
    return Number(rows[0]?.n ?? 0);
  } finally {
    await store.close();
  }
}

/** Each call in a load process of its own (bench/console-load.ts), one after another. */
async function measurePhase(
  name: string,
  calls: PlannedCall[],
  gateway: RunningGateway,
  target: StoreTarget,
  options: ConsoleBenchOptions,
): Promise<Phase> {
  log(`\n${name}: ${calls.length} calls at concurrency ${options.concurrency.join(" and ")}`);
  const records = await countRecords(target);
  const results: CallResult[] = [];
  for (const { view: _, ...call } of calls) {
    const plan: LoadPlan = {
      origin: gateway.origin,
      concurrency: options.concurrency,
      warmup: WARMUP,
      gatewayPid: gateway.server.pid,
      ...(target.kind === "postgres" ? { database: new URL(target.url).pathname.slice(1) } : {}),
      calls: [call],
    };
    // Generous: a slow export at 120 s per request must still be reported, not killed.
    const limitMs = (call.requests * options.concurrency.length + WARMUP + 1) * 120_000;
    const line = await runToEnd(`load (${call.id})`, [LOAD_SCRIPT, JSON.stringify(plan)], limitMs);
    const result = (JSON.parse(line) as CallResult[])[0]!;
    results.push(result);
    const runs = result.runs.map((r) =>
      call.kind === "json"
        ? `c${r.concurrency} p50 ${r.totalMs.p50.toFixed(1)} p95 ${r.totalMs.p95.toFixed(1)} ms`
        : `c${r.concurrency} TTFB p95 ${r.ttfbMs.p95.toFixed(1)} total p95 ${r.totalMs.p95.toFixed(0)} ms`,
    );
    log(
      `  ${call.id.padEnd(44)} ${runs.length ? runs.join("   ") : `${result.cold.status} ${result.cold.error}`}`,
    );
  }
  return { name, records, results };
}

interface RetentionRun {
  ms: number;
  deleted: RetentionCounts;
  recordsBefore: number;
  recordsAfter: number;
  /**
   * How long this process's event loop was held up during the run: the stall the gateway's
   * own retention job would add to its requests (node:sqlite runs each chunk synchronously).
   */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
  /** PostgreSQL: the VACUUM ANALYZE that autovacuum would run after such a delete */
  vacuumMs?: number;
}

/** One run of the gateway's own retention (src/retention/retention.ts) on the store, timed. */
async function runRetention(target: StoreTarget, settings: { records_kept: number; days: number }) {
  const recordsBefore = await countRecords(target);
  const store = openTarget(target);
  let run: RetentionRun;
  try {
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const started = performance.now();
    const deleted = await pruneRecords(store.db, settings);
    const ms = Math.round(performance.now() - started);
    delay.disable();
    const eventLoopDelayMs = {
      p50: delay.percentile(50) / 1e6,
      p99: delay.percentile(99) / 1e6,
      max: delay.max / 1e6,
    };
    run = { ms, deleted, recordsBefore, recordsAfter: 0, eventLoopDelayMs };
    if (target.kind === "postgres") {
      const vacuumStarted = performance.now();
      await sql`vacuum analyze call_records`.execute(store.db);
      run.vacuumMs = Math.round(performance.now() - vacuumStarted);
    }
  } finally {
    await store.close();
  }
  run.recordsAfter = await countRecords(target);
  return run;
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

function gitCommit(): string | undefined {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

function writeResults(doc: Record<string, unknown>): string {
  mkdirSync(OUT_DIR, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
  const file = join(OUT_DIR, `console-${stamp}.json`);
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  return file;
}

/** The summary without the users' passwords. */
function publicSummary(summary: SeedSummary) {
  const strip = ({ password: _, ...user }: BenchUser) => user;
  const { bigOwner, smallOwner, admin } = summary.users;
  return {
    ...summary,
    users: { bigOwner: strip(bigOwner), smallOwner: strip(smallOwner), admin: strip(admin) },
  };
}

function formatRetention(run: RetentionRun, settings: { records_kept: number; days: number }): string {
  const d = run.deleted;
  return (
    `retention run (records_kept ${settings.records_kept}, days ${settings.days}): ${(run.ms / 1000).toFixed(1)} s, ` +
    `deleted ${fmt(d.no_consumption)} past records without consumption, ${fmt(d.expired)} older than ${settings.days} days, ` +
    `${fmt(d.beyond_kept)} beyond the newest ${settings.records_kept} per account; ` +
    `records ${fmt(run.recordsBefore)} -> ${fmt(run.recordsAfter)}; event loop held up p50 ` +
    `${run.eventLoopDelayMs.p50.toFixed(0)} ms, p99 ${run.eventLoopDelayMs.p99.toFixed(0)} ms, max ${run.eventLoopDelayMs.max.toFixed(0)} ms` +
    (run.vacuumMs !== undefined ? `; then VACUUM ANALYZE ${(run.vacuumMs / 1000).toFixed(1)} s` : "")
  );
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

async function bench(options: ConsoleBenchOptions): Promise<number> {
  workDir = mkdtempSync(join(tmpdir(), "gateway-console-bench-"));
  log(
    options.reuse
      ? `reusing the store kept in ${options.reuse}`
      : `seeding ${fmt(options.records)} records over ${options.accounts} accounts into ${options.store}…`,
  );
  const prepared = await prepareStore(options, workDir, log);
  const { summary } = prepared;
  const check = await checkSeed(prepared.target, summary.now);
  printSeed(summary, check, prepared);
  if (prepared.seeded && !seedIsConsistent(summary, check)) {
    log("the seeded store does not add up; stopping");
    return 1;
  }
  if (prepared.seeded && prepared.keptAt)
    log(
      `kept the store as seeded, before retention: --reuse ${prepared.keptAt}` +
        (prepared.keptDatabase ? ` (database ${prepared.keptDatabase}; drop it when done)` : ""),
    );
  if (options.seedOnly) return 0;
  if (utcDay(summary.now) !== utcDay(Date.now()))
    log(`note: the store was seeded on ${utcDay(summary.now)}: its "today" is not today any more`);

  const gateway = await startGateway(prepared.target, workDir, options.logLevel);
  const { users } = summary;
  const sessions: Sessions = {
    big: await login(gateway.origin, users.bigOwner),
    small: await login(gateway.origin, users.smallOwner),
    admin: await login(gateway.origin, users.admin),
  };
  const calls = await planCalls(gateway.origin, sessions, summary, options);
  const phases: Phase[] = [];
  phases.push(await measurePhase("before retention", calls, gateway, prepared.target, options));

  // The gateway's own defaults (records_kept, days), as its retention job would use them.
  const settings = configSchema.parse(gatewayConfig({ data_dir: "unused" }, "warn")).retention;
  log("\nrunning retention once…");
  const retention = await runRetention(prepared.target, settings);
  log(formatRetention(retention, settings));
  const views = calls.filter((c) => c.view);
  phases.push(await measurePhase("after retention", views, gateway, prepared.target, options));
  const peakRssMb = statusKb(gateway.server.pid, "VmHWM") / 1024;

  process.stdout.write(`\n${phases.map(formatPhase).join("\n\n")}\n\n`);
  process.stdout.write(`${formatRetention(retention, settings)}\n`);
  process.stdout.write(
    `gateway peak RSS ${peakRssMb.toFixed(0)} MB; ${gateway.server.logs.count} log lines` +
      (gateway.server.logs.count ? ` (last: ${gateway.server.logs.tail.at(-1)})` : "") +
      "\n",
  );
  const slow = slowCalls(phases);
  const failed = failedCalls(phases);
  if (slow.length) process.stdout.write(`\nslow (see bench/README.md):\n  ${slow.join("\n  ")}\n`);
  if (failed.length) process.stdout.write(`\nFAILED answers, not a clean run:\n  ${failed.join("\n  ")}\n`);

  const file = writeResults({
    date: new Date().toISOString(),
    commit: gitCommit(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, node: process.version },
    options: { ...options, store: prepared.target.kind },
    store: describeTarget(prepared.target),
    seed: publicSummary(summary),
    check,
    retention: { settings, ...retention },
    gateway: { peakRssMb, logLines: gateway.server.logs.count },
    phases,
    slow,
    failed,
  });
  log(`\nresults in ${file}`);
  return failed.length ? 1 : 0;
}

async function main(): Promise<void> {
  let options: ConsoleBenchOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    log(`${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
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
}

main().catch((err: unknown) => {
  log(`bench:console failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
});
