// `npm run soak`: the invariant suite's mixed load (test/support/mixed-load.ts) at soak size,
// 10,000 requests through a pool of 64 in flight by default, against a real gateway on
// loopback with a fresh SQLite store (or its own PostgreSQL database, dropped afterwards)
// and the mock upstream, which counts prompt tokens as a chat template does. With
// --instances N, N gateway processes (`node src/main.ts serve`) share one PostgreSQL store
// (and Redis, by default) and the load is spread over them. Prints the figures and the
// invariant check; exits 1 on any violation. Not part of `npm test`.
//
//   node bench/soak.ts [--requests 10000] [--concurrency 64] [--store sqlite|postgres|postgres+redis]
//                      [--instances 1] [--seed N]
//
// With one instance the gateway, the mock upstream and the load run in this one process, so
// the peak RSS printed is theirs together; with several, each gateway's is printed too.
import { parseArgs } from "node:util";
import { type Cluster, startCluster } from "../test/support/cluster.ts";
import { type StoreKind, startTestGateway, type TestGateway } from "../test/support/gateway.ts";
import {
  loadConfig,
  loadTarget,
  type MixedLoadResult,
  REQUEST_KINDS,
  runMixedLoad,
  type SubjectFigures,
  seedFrom,
  summarize,
} from "../test/support/mixed-load.ts";
import { type MockUpstream, startMockUpstream } from "../test/support/mock-openai-upstream.ts";
import { statusKb } from "./proc-stats.ts";

const USAGE = `usage: node bench/soak.ts [options]

  --requests N      requests to send                      (default 10000)
  --concurrency N   requests in flight at once            (default 64)
  --store S         sqlite, postgres or postgres+redis    (default sqlite, or postgres+redis with --instances;
                    postgres uses TEST_PG_ADMIN_URL or postgres://postgres@127.0.0.1:5432/postgres to create
                    and drop its own database; Redis is TEST_REDIS_URL or redis://127.0.0.1:6379, under a
                    key prefix of its own)
  --instances N     gateway processes sharing the store   (default 1: the gateway in this process)
  --seed N          the PRNG seed of the mix              (default: random, printed)
  --accounts N      accounts                              (default 8)
  --keys N          keys per account                      (default 4)`;

interface SoakOptions {
  requests: number;
  concurrency: number;
  store: StoreKind;
  instances: number;
  seed: number;
  accounts: number;
  keys: number;
}

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

function parseOptions(argv: string[]): SoakOptions | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      requests: { type: "string" },
      concurrency: { type: "string" },
      store: { type: "string" },
      seed: { type: "string" },
      accounts: { type: "string" },
      keys: { type: "string" },
      instances: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) return undefined;
  const instances = int("--instances", values.instances, 1, 1, 16);
  const store = values.store ?? (instances > 1 ? "postgres+redis" : "sqlite");
  if (store !== "sqlite" && store !== "postgres" && store !== "postgres+redis")
    throw new Error("--store must be sqlite, postgres or postgres+redis");
  if (instances > 1 && store === "sqlite")
    throw new Error("several instances share a PostgreSQL store: --store postgres or postgres+redis");
  return {
    requests: int("--requests", values.requests, 10_000, 1, 1_000_000),
    concurrency: int("--concurrency", values.concurrency, 64, 1, 1_000),
    store,
    instances,
    seed: seedFrom(values.seed),
    accounts: int("--accounts", values.accounts, 8, 1, 1_000),
    keys: int("--keys", values.keys, 4, 1, 100),
  };
}

const log = (line = "") => process.stdout.write(`${line}\n`);
const pad = (s: string | number, n: number) => String(s).padEnd(n);
const lpad = (s: string | number, n: number) => String(s).padStart(n);
const fmt = (n: number) => n.toLocaleString("en-US");

function capText(f: SubjectFigures): string {
  return f.cap === null ? "none" : f.cap >= 1_000_000 ? `${fmt(f.cap)} (open)` : fmt(f.cap);
}

function stats(values: number[]): string {
  if (!values.length) return "-";
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return `min ${fmt(sorted[0]!)}  median ${fmt(at(0.5))}  max ${fmt(sorted[sorted.length - 1]!)}`;
}

function printFigures(
  options: SoakOptions,
  result: MixedLoadResult,
  peakRssKb: number,
  gatewaysPeakKb: number[],
): void {
  const { report, outcomes, durationMs } = result;
  const { byKind, byLabel, byRecord } = summarize(result);
  log();
  log(
    `soak: ${fmt(options.requests)} requests, ${options.concurrency} in flight, store ${options.store}, ${options.instances} instance${options.instances > 1 ? "s" : ""}`,
  );
  log(`seed ${result.seed}  (node bench/soak.ts --seed ${result.seed} replays the mix)`);
  log(
    `duration ${(durationMs / 1000).toFixed(1)} s   ${(outcomes.length / (durationMs / 1000)).toFixed(0)} req/s`,
  );
  log();
  log("outcomes by kind (what the client saw)");
  for (const kind of REQUEST_KINDS) {
    const m = byKind.get(kind);
    if (!m) continue;
    const total = [...m.values()].reduce((a, b) => a + b, 0);
    const parts = [...m.entries()].sort((a, b) => b[1] - a[1]).map(([label, n]) => `${label}: ${fmt(n)}`);
    log(`  ${pad(kind, 20)} ${lpad(fmt(total), 6)}   ${parts.join(", ")}`);
  }
  log();
  log("outcomes by status");
  for (const [label, n] of [...byLabel.entries()].sort((a, b) => b[1] - a[1]))
    log(`  ${pad(label, 34)} ${lpad(fmt(n), 6)}`);
  log();
  log(
    `records written: ${fmt(report.records.length)}   (hang-ups that never reached the gateway: ${report.unreached})`,
  );
  for (const [label, n] of [...byRecord.entries()].sort((a, b) => b[1] - a[1]))
    log(`  ${pad(label, 44)} ${lpad(fmt(n), 6)}`);
  log();
  const charged = report.accounts.reduce((sum, a) => sum + a.stored, 0);
  const byKeys = report.keys.reduce((sum, k) => sum + k.stored, 0);
  const recorded = report.records.reduce((sum, r) => sum + r.total_tokens, 0);
  log(
    `tokens charged: ${fmt(charged)} over the accounts, ${fmt(byKeys)} over the keys, ${fmt(recorded)} in the records`,
  );
  log(`  per key (${report.keys.length}):      ${stats(report.keys.map((k) => k.stored))}`);
  log(`  per account (${report.accounts.length}):   ${stats(report.accounts.map((a) => a.stored))}`);
  log();
  log(
    `  ${pad("account", 12)} ${pad("cap", 22)} ${lpad("used", 9)} ${lpad("records", 8)} ${lpad("ledger", 9)}`,
  );
  for (const a of report.accounts)
    log(
      `  ${pad(a.label, 12)} ${pad(capText(a), 22)} ${lpad(fmt(a.stored), 9)} ${lpad(fmt(a.records), 8)} ${lpad(fmt(a.ledgerUsed), 9)}`,
    );
  const limited = report.keys.filter((k) => k.cap !== null);
  const atLimit = limited.filter((k) => k.cap! - k.stored < 100).length;
  log(`  keys with a limit: ${limited.length}, within 100 tokens of it at the end: ${atLimit}`);
  log();
  log(`open reservations: ${report.openReservations}`);
  log(`invariant violations: ${report.violations.length}`);
  for (const v of report.violations.slice(0, 30)) log(`  - ${v}`);
  if (report.violations.length > 30) log(`  … and ${report.violations.length - 30} more`);
  const overrun = report.records.reduce((sum, r) => sum + (r.overrun_tokens ?? 0), 0);
  log(`overrun tokens (reported beyond the reservation): ${fmt(overrun)}`);
  log();
  if (gatewaysPeakKb.length)
    log(
      `peak RSS: load + mock ${(peakRssKb / 1024).toFixed(0)} MB; gateways ${gatewaysPeakKb.map((kb) => `${(kb / 1024).toFixed(0)} MB`).join(", ")}`,
    );
  else log(`peak RSS (gateway + mock + load, one process): ${(peakRssKb / 1024).toFixed(0)} MB`);
}

async function main(): Promise<number> {
  let options: SoakOptions | undefined;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (!options) {
    log(USAGE);
    return 0;
  }
  // The caps scale with the load, so the small ones run out part-way through.
  const perKey = options.requests / (options.accounts * options.keys);
  const smallLimit = Math.max(300, Math.round(perKey * 15));
  const smallQuota = Math.max(600, Math.round(perKey * options.keys * 15));

  let upstream: MockUpstream | undefined;
  let gw: TestGateway | undefined;
  let cluster: Cluster | undefined;
  let result: MixedLoadResult;
  const gatewaysPeakKb: number[] = [];
  try {
    upstream = await startMockUpstream({
      latencyMs: 2,
      chunkDelayMs: 1,
      record: false,
      promptCount: "template",
    });
    const config = loadConfig(upstream, { smallPlanQuota: smallQuota });
    if (options.instances > 1)
      cluster = await startCluster({
        instances: options.instances,
        upstream,
        redis: options.store === "postgres+redis",
        config,
      });
    else gw = await startTestGateway({ upstream, store: options.store, config });
    process.stderr.write(
      `soak: seed ${options.seed}, ${options.requests} requests, ${options.concurrency} in flight, ${options.store}, ${options.instances} instance(s)\n`,
    );
    const step = Math.max(1, Math.floor(options.requests / 10));
    result = await runMixedLoad(cluster ? cluster.target : loadTarget(gw!), {
      seed: options.seed,
      requests: options.requests,
      concurrency: options.concurrency,
      accounts: options.accounts,
      keysPerAccount: options.keys,
      smallQuota,
      smallLimit,
      label: "soak",
      onProgress: (n) => {
        if (n % step === 0) process.stderr.write(`  ${n} / ${options.requests}\n`);
      },
    });
    for (const i of cluster?.instances ?? []) gatewaysPeakKb.push(statusKb(i.child.pid!, "VmHWM"));
  } finally {
    await gw?.close();
    await cluster?.close();
    await upstream?.close();
  }
  printFigures(options, result, process.resourceUsage().maxRSS, gatewaysPeakKb);
  return result.report.violations.length ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
