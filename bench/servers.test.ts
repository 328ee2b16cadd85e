// The bench's gateway as `npm run bench` starts it (processes of `npm start`'s command
// with the bench's config and the key of its first start) answers every gateway target
// completely: chat completions, the routed model, the Messages and the Responses API. On
// PostgreSQL with Redis, two instances share the store and the one key; afterwards the run's
// database and Redis keys are gone.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import pg from "pg";
import { storeSuite } from "../test/support/postgres.ts";
import { START_FLAGS } from "../test/support/start-command.ts";
import { PG_ADMIN_URL, REDIS_URL } from "./databases.ts";
import { stopAll } from "./processes.ts";
import { preflight } from "./requests.ts";
import {
  apiTarget,
  collectProfiles,
  directTarget,
  routedTarget,
  startGatewayTarget,
  startMock,
  startPassthrough,
  type Target,
  targetFor,
} from "./servers.ts";
import { prepareStore, removeStores } from "./stores.ts";
import type { StoreKind } from "./types.ts";

async function gatewayTargets(kind: StoreKind, instances: number, dir: string) {
  const store = await prepareStore(kind);
  const mock = await startMock(0);
  const pacedMock = await startMock(0, "openai", 1);
  const gateway = await startGatewayTarget(
    mock,
    dir,
    {
      logLevel: "warn",
      safety: "off",
      provider: "openai",
      instances,
      store,
      nodeOptions: ["--max-semi-space-size=8"],
      pacedUpstream: String(pacedMock.info.url),
    },
    { perf: true },
  );
  const targets: Target[] = [
    gateway,
    routedTarget(gateway),
    apiTarget(gateway, "messages"),
    apiTarget(gateway, "responses"),
  ];
  return { store, gateway, targets };
}

async function answersCompletely(targets: Target[]): Promise<void> {
  for (const target of targets)
    for (const mode of ["json", "stream", "stream-paced"] as const)
      await preflight(targetFor(target, mode), mode, 20);
}

for (const [kind, instances] of [
  ["sqlite", 1],
  ["postgres+redis", 2],
] as const) {
  describe(`bench gateway on ${kind}, ${instances} instance(s)`, await storeSuite(kind), () => {
    const dir = mkdtempSync(join(tmpdir(), "gateway-bench-test-"));
    /** the JIT maps --perf-basic-prof makes Node write, removed with the rest */
    const perfMaps: string[] = [];
    after(async () => {
      await stopAll();
      for (const map of perfMaps) rmSync(map, { force: true });
      await removeStores();
      rmSync(dir, { recursive: true, force: true });
    });

    test("every gateway target answers at every instance, with the one key", async () => {
      const { store, gateway, targets } = await gatewayTargets(kind, instances, dir);
      assert.equal(gateway.urls.length, instances);
      assert.equal(new Set(gateway.pids).size, instances);
      for (const pid of gateway.pids) {
        const line = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        for (const flag of START_FLAGS)
          assert.ok(line.includes(flag), `npm start's ${flag}, as operators run it`);
        assert.ok(
          line.indexOf("--max-semi-space-size=8") > Math.max(...START_FLAGS.map((f) => line.indexOf(f))),
          "each instance runs with the bench's --node-options, after npm start's flags (the last wins)",
        );
      }
      for (const pid of gateway.pids) {
        assert.ok(
          readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("--perf-basic-prof"),
          "with --perf, each instance names its JIT code for perf",
        );
        perfMaps.push(`/tmp/perf-${pid}.map`);
      }
      const isolateLogs = () =>
        readdirSync(process.cwd()).filter((f) => gateway.pids.some((pid) => f.endsWith(`-${pid}-v8.log`)));
      assert.deepEqual(isolateLogs(), [], "V8's log of a perf run leaves no file in the working directory");
      assert.deepEqual(
        targets.map((t) => t.urls.map((u) => new URL(u).pathname)[0]),
        ["/v1/chat/completions", "/v1/chat/completions", "/v1/messages", "/v1/responses"],
      );
      await answersCompletely(targets);

      if (kind === "sqlite") return;
      // the instances share the run's database and Redis prefix, which go with the run
      const database = store.database!;
      const prefix = store.redisPrefix!;
      const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0 });
      await redis.connect();
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await admin.connect();
      try {
        const keys = async () => {
          let count = 0;
          let cursor = "0";
          do {
            const [next, found] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
            count += found.length;
            cursor = next;
          } while (cursor !== "0");
          return count;
        };
        const exists = async () =>
          (await admin.query("select 1 from pg_database where datname = $1", [database])).rowCount === 1;
        assert.ok(await exists());
        assert.ok((await keys()) > 0, "the ledger keeps its state under the run's prefix");
        await stopAll();
        await removeStores();
        assert.equal(await exists(), false);
        assert.equal(await keys(), 0);
      } finally {
        await admin.end();
        redis.disconnect();
      }
    });
  });
}

describe("bench baselines", () => {
  after(() => stopAll());

  test("the pass-through forwards each mode to its mock, one process for both; direct is each mock", async () => {
    const mock = await startMock(0);
    const pacedMock = await startMock(0, "openai", 1);
    const passthrough = await startPassthrough(mock, { perf: false }, pacedMock);
    const direct = directTarget(mock, pacedMock);
    assert.deepEqual(targetFor(passthrough, "stream-paced").pids, passthrough.pids);
    assert.deepEqual(targetFor(direct, "stream-paced").pids, [pacedMock.pid]);
    assert.deepEqual(targetFor(direct, "stream").pids, [mock.pid]);
    for (const target of [direct, passthrough]) {
      for (const mode of ["json", "stream", "stream-paced"] as const)
        await preflight(targetFor(target, mode), mode, 20);
      // the paced mock writes each event on its own, a millisecond apart: 22 events take 22 ms or more
      const started = performance.now();
      await preflight(targetFor(target, "stream-paced"), "stream-paced", 20);
      assert.ok(performance.now() - started >= 22, `${target.name}'s paced stream came paced`);
    }
  });
});

describe("bench profiles", () => {
  test("a process's main thread and its worker threads each keep a profile, named by process", () => {
    const dir = mkdtempSync(join(tmpdir(), "gateway-bench-profiles-"));
    try {
      // a process with a worker thread, profiled as the bench profiles the gateway
      execFileSync(process.execPath, [
        "--cpu-prof",
        `--cpu-prof-dir=${join(dir, "gateway-1")}`,
        "-e",
        "new (require('node:worker_threads').Worker)('let x = 0; for (let i = 0; i < 1e6; i++) x += i', { eval: true })",
      ]);
      collectProfiles(dir);
      assert.deepEqual(readdirSync(dir).sort(), ["gateway-1.cpuprofile", "workers"]);
      assert.deepEqual(readdirSync(join(dir, "workers")), ["gateway-1-thread1.cpuprofile"]);
      for (const file of [
        join(dir, "gateway-1.cpuprofile"),
        join(dir, "workers", "gateway-1-thread1.cpuprofile"),
      ])
        assert.ok((JSON.parse(readFileSync(file, "utf8")) as { nodes: unknown[] }).nodes.length > 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
