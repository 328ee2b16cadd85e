// The console benchmark's load process: sends the console API calls of a plan to the gateway,
// each first once (cold), then a few unmeasured times, then N times at each concurrency level,
// and times every response (headers, first body byte, last byte). A process of its own, so its
// CPU does not run inside the orchestrator and is not billed to the gateway.
//   node bench/console-load.ts '<LoadPlan as JSON>'
// prints one line: the CallResult[] as JSON.
import { Pool } from "undici";
import { backendsCpu, backendsSpent, cpuMicros, machineCpuMicros } from "./proc-stats.ts";

export interface LoadCall {
  /** "<who> <what>", e.g. "big records today" */
  id: string;
  path: string;
  cookie: string;
  kind: "json" | "export";
  /** requests per concurrency level */
  requests: number;
}

export interface LoadPlan {
  origin: string;
  concurrency: number[];
  /** unmeasured requests per call after the cold one */
  warmup: number;
  /** the gateway's pid, whose CPU time is read around each run */
  gatewayPid: number;
  /** PostgreSQL: the run's database, whose backends' CPU time is read around each run */
  database?: string;
  calls: LoadCall[];
}

export interface Summary {
  p50: number;
  p95: number;
  max: number;
  mean: number;
}

export interface CallRun {
  concurrency: number;
  requests: number;
  /** 2xx answers; latencies are theirs */
  ok: number;
  failed: number;
  statuses: Record<string, number>;
  /** until the last byte */
  totalMs: Summary;
  /** until the first body byte */
  ttfbMs: Summary;
  bytes: number;
  reqPerS: number;
  /** the gateway's CPU time per request during the run */
  gatewayCpuMsPerReq: number;
  /** PostgreSQL: its backends' CPU time per request (SQLite's is the gateway's own); else null */
  storeCpuMsPerReq: number | null;
  /**
   * Cores kept busy during the run by processes other than the gateway, its PostgreSQL backends
   * and this one: well above
   * zero means the machine was shared and the latencies are disturbed.
   */
  otherLoadCores: number;
}

/** What the first answer of a call looked like (the first time the gateway ran its queries). */
export interface CallSample {
  status: number;
  contentType: string;
  bytes: number;
  ms: number;
  ttfbMs: number;
  /** JSON: the length of `data` when there is one; export: the lines (CSV: with the header) */
  rows: number | null;
  /** JSON: next_before is set */
  more: boolean | null;
  /** the start of a body that was not a 2xx */
  error: string | null;
}

export interface CallResult {
  id: string;
  path: string;
  kind: LoadCall["kind"];
  cold: CallSample;
  runs: CallRun[];
}

const TIMEOUT_MS = 120_000;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

function summarise(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    max: sorted.at(-1) ?? 0,
    mean: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : 0,
  };
}

interface Timed {
  status: number;
  contentType: string;
  ttfbMs: number;
  totalMs: number;
  bytes: number;
  /** only when asked to keep it */
  body?: Buffer;
}

async function send(pool: Pool, call: LoadCall, keepBody: boolean): Promise<Timed> {
  const started = performance.now();
  const res = await pool.request({
    path: call.path,
    method: "GET",
    headers: { cookie: call.cookie, accept: call.kind === "json" ? "application/json" : "*/*" },
    headersTimeout: TIMEOUT_MS,
    bodyTimeout: TIMEOUT_MS,
  });
  let ttfbMs = 0;
  let bytes = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    if (bytes === 0) ttfbMs = performance.now() - started;
    bytes += chunk.length;
    if (keepBody) chunks.push(chunk);
  }
  const totalMs = performance.now() - started;
  const contentType = String(res.headers["content-type"] ?? "");
  return {
    status: res.statusCode,
    contentType,
    ttfbMs: bytes ? ttfbMs : totalMs,
    totalMs,
    bytes,
    ...(keepBody ? { body: Buffer.concat(chunks) } : {}),
  };
}

function sample(call: LoadCall, t: Timed): CallSample {
  const text = t.body?.toString("utf8") ?? "";
  const base = {
    status: t.status,
    contentType: t.contentType,
    bytes: t.bytes,
    ms: t.totalMs,
    ttfbMs: t.ttfbMs,
  };
  if (t.status < 200 || t.status > 299) return { ...base, rows: null, more: null, error: text.slice(0, 300) };
  if (call.kind === "export") {
    const lines = text.split("\n").filter((l) => l.length > 0).length;
    return { ...base, rows: lines, more: null, error: null };
  }
  try {
    const doc = JSON.parse(text) as { data?: unknown; next_before?: unknown };
    return {
      ...base,
      rows: Array.isArray(doc.data) ? doc.data.length : null,
      more: "next_before" in doc ? doc.next_before !== null : null,
      error: null,
    };
  } catch {
    return { ...base, rows: null, more: null, error: `not JSON: ${text.slice(0, 200)}` };
  }
}

async function run(pool: Pool, call: LoadCall, concurrency: number, plan: LoadPlan): Promise<CallRun> {
  const { gatewayPid, database } = plan;
  const totals: number[] = [];
  const ttfbs: number[] = [];
  const statuses: Record<string, number> = {};
  let bytes = 0;
  let failed = 0;
  let next = 0;
  const selfCpu = () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  };
  const before = {
    gateway: cpuMicros(gatewayPid),
    store: backendsCpu(database),
    self: selfCpu(),
    machine: machineCpuMicros(),
  };
  const started = performance.now();
  const worker = async () => {
    while (next < call.requests) {
      next++;
      try {
        const t = await send(pool, call, false);
        statuses[t.status] = (statuses[t.status] ?? 0) + 1;
        if (t.status >= 200 && t.status < 300) {
          totals.push(t.totalMs);
          ttfbs.push(t.ttfbMs);
          bytes += t.bytes;
        } else failed++;
      } catch {
        statuses.error = (statuses.error ?? 0) + 1;
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wallMs = performance.now() - started;
  const gatewayMicros = cpuMicros(gatewayPid) - before.gateway;
  const storeMicros = backendsSpent(before.store, backendsCpu(database));
  const otherMicros =
    machineCpuMicros() - before.machine - gatewayMicros - storeMicros - (selfCpu() - before.self);
  return {
    concurrency,
    requests: call.requests,
    ok: totals.length,
    failed,
    statuses,
    totalMs: summarise(totals),
    ttfbMs: summarise(ttfbs),
    bytes: totals.length ? bytes / totals.length : 0,
    reqPerS: wallMs > 0 ? (call.requests * 1000) / wallMs : 0,
    gatewayCpuMsPerReq: gatewayMicros / 1000 / call.requests,
    storeCpuMsPerReq: database ? storeMicros / 1000 / call.requests : null,
    otherLoadCores: wallMs > 0 ? Math.max(0, otherMicros) / (wallMs * 1000) : 0,
  };
}

async function measureCall(pool: Pool, call: LoadCall, plan: LoadPlan): Promise<CallResult> {
  // The connection is open and this process's HTTP code compiled before the first timed call.
  await send(pool, { ...call, path: "/healthz", kind: "json" }, false);
  const cold = sample(call, await send(pool, call, true));
  const runs: CallRun[] = [];
  // A call that fails is reported as it is, not measured: a fast error is not a fast view.
  if (cold.error === null) {
    for (let i = 0; i < plan.warmup; i++) await send(pool, call, false);
    for (const c of plan.concurrency) runs.push(await run(pool, call, c, plan));
  }
  return { id: call.id, path: call.path, kind: call.kind, cold, runs };
}

async function main(): Promise<void> {
  const plan = JSON.parse(process.argv[2] ?? "null") as LoadPlan | null;
  if (!plan) {
    process.stderr.write("usage: node bench/console-load.ts '<LoadPlan JSON>'\n");
    process.exit(2);
  }
  const pool = new Pool(plan.origin, {
    connections: Math.max(...plan.concurrency),
    pipelining: 1,
    keepAliveTimeout: 30_000,
  });
  const results: CallResult[] = [];
  try {
    for (const call of plan.calls) {
      const result = await measureCall(pool, call, plan);
      const last = result.runs.at(-1);
      process.stderr.write(
        `  ${call.id.padEnd(32)} ${result.cold.status} ` +
          (last
            ? `p50 ${result.runs.map((r) => r.totalMs.p50.toFixed(1)).join(" / ")} ms`
            : `failed: ${result.cold.error}`) +
          "\n",
      );
      results.push(result);
    }
  } finally {
    await pool.close();
  }
  process.stdout.write(`${JSON.stringify(results)}\n`);
}

await main();
