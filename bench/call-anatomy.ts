// Where one call's CPU goes, process by process and thread by thread (decision 0044): the
// bench's own servers (the mock, the pass-through, a gateway per store, from `dist/` as the
// bench runs it), each warmed up and then sent `--seconds` of calls at `--rate`, with their
// /proc counters read around the run. Per call: user and system CPU; the main thread against
// V8's workers (the collector's and the optimizing compilers' threads) and the rest; on
// PostgreSQL + Redis, the stores' CPU (PostgreSQL's hold journal apart, by application_name)
// and what Redis ran (INFO commandstats: calls and time inside Redis per call; it resets
// Redis's statistics, so run it on a Redis of its own). Not part of `npm test`.
//   node bench/call-anatomy.ts [--store sqlite,postgres+redis] [--mode json] [--rate 500] [--seconds 8]
//     [--node-options="--single-threaded-gc"]   (the gateway's Node and V8 flags, as the bench's)
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { REDIS_URL } from "./databases.ts";
import { runLoad } from "./measure.ts";
import { statCpu } from "./proc-stats.ts";
import { stopAll } from "./processes.ts";
import { requestBody, requestHeaders } from "./requests.ts";
import { startGatewayTarget, startMock, startPassthrough, type Target } from "./servers.ts";
import {
  type BenchStore,
  holdBackends,
  prepareStore,
  removeStores,
  storeCpu,
  storeSpentParts,
} from "./stores.ts";
import type { LoadResult, Mode, StoreKind } from "./types.ts";

const { values } = parseArgs({
  options: {
    store: { type: "string", default: "sqlite,postgres+redis" },
    mode: { type: "string", default: "json" },
    rate: { type: "string", default: "500" },
    seconds: { type: "string", default: "8" },
    "node-options": { type: "string", default: "" },
  },
});
// stream-paced needs the bench's pacing mock behind models of their own: `npm run bench` has it
if (values.mode !== "json" && values.mode !== "stream") {
  console.error(`--mode: json or stream, not ${values.mode}`);
  process.exit(2);
}
const MODE = values.mode as Mode;
const RATE = Number(values.rate);
const SECONDS = Number(values.seconds);
const WARM_UP_S = 3;

/** CPU µs of each thread of a process, by thread name (V8's workers summed under one name). */
function threadCpu(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let thread: ReturnType<typeof statCpu>;
    try {
      thread = statCpu(`/proc/${pid}/task/${tid}/stat`);
    } catch {
      continue; // the thread ended while we looked
    }
    const name = thread.name.replace(/\d+$/, "");
    byName.set(name, (byName.get(name) ?? 0) + thread.user + thread.system);
  }
  return byName;
}

/** INFO commandstats: calls and µs inside Redis per command. */
async function commandStats(redis: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const stats = new Map<string, { calls: number; usec: number }>();
  for (const m of (await redis.info("commandstats")).matchAll(/cmdstat_(\w+):calls=(\d+),usec=(\d+)/g))
    stats.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  return stats;
}

function load(target: Target, seconds: number, rate?: number): Promise<LoadResult> {
  return runLoad({
    urls: target.urls,
    headers: requestHeaders(target),
    body: requestBody(target.api, target.model, 20, MODE),
    connections: 50,
    durationS: seconds,
    timeoutS: 10,
    ...(rate ? { overallRate: rate } : {}),
  });
}

const perCall = (micros: number, calls: number) => (micros / calls).toFixed(0).padStart(5);

async function anatomy(name: string, target: Target, store?: BenchStore, redis?: Redis): Promise<void> {
  await load(target, WARM_UP_S);
  const pid = target.pids[0]!;
  const threadsBefore = threadCpu(pid);
  const before = statCpu(`/proc/${pid}/stat`);
  const storeBefore = store && store.kind !== "sqlite" ? storeCpu(store) : undefined;
  const withRedis = store?.kind === "postgres+redis" ? redis : undefined;
  if (withRedis) await withRedis.config("RESETSTAT");
  const result = await load(target, SECONDS, RATE);
  const after = statCpu(`/proc/${pid}/stat`);
  const threadsAfter = threadCpu(pid);
  const n = result.responses;
  const lines = [`${name}: ${n} calls, p50 ${result.latencyMs.p50.toFixed(2)} ms; µs a call:`];
  lines.push(
    `  user ${perCall(after.user - before.user, n)}   system ${perCall(after.system - before.system, n)}`,
  );
  const threads = [...threadsAfter].map(
    ([t, cpu]) => `${t} ${perCall(cpu - (threadsBefore.get(t) ?? 0), n).trim()}`,
  );
  lines.push(`  threads: ${threads.join(", ")}`);
  if (storeBefore && store) {
    const spent = storeSpentParts(storeBefore, storeCpu(store), await holdBackends(store));
    lines.push(
      `  stores: PostgreSQL ${perCall(spent.postgres, n).trim()} (holds ${perCall(spent.holds ?? 0, n).trim()}), Redis ${perCall(spent.redis, n).trim()}`,
    );
  }
  if (withRedis) {
    const top = [...(await commandStats(withRedis))].sort((a, b) => b[1].usec - a[1].usec);
    lines.push(
      `  inside Redis: ${top.map(([c, s]) => `${c} ${(s.calls / n).toFixed(2)}× ${(s.usec / n).toFixed(1)} µs`).join(", ")}`,
    );
  }
  console.log(lines.join("\n"));
}

const stores = (values.store ?? "").split(",").filter(Boolean) as StoreKind[];
const redis = stores.includes("postgres+redis") ? new Redis(REDIS_URL) : undefined;
try {
  const mock = await startMock(20);
  await anatomy("pass-through", await startPassthrough(mock, { perf: false }));
  for (const kind of stores) {
    const store = await prepareStore(kind);
    const gateway = await startGatewayTarget(
      mock,
      mkdtempSync(join(tmpdir(), "call-anatomy-")),
      {
        logLevel: "warn",
        safety: "off",
        provider: "openai",
        instances: 1,
        nodeOptions: values["node-options"]!.split(" ").filter(Boolean),
        store,
      },
      { perf: false },
    );
    await anatomy(`gateway on ${kind}`, gateway, store, redis);
  }
} finally {
  redis?.disconnect();
  await stopAll();
  await removeStores();
}
