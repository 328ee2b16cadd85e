// Issue #9, item 4: any number of instances on one PostgreSQL store (and one Redis) hold every
// limit exactly as one instance does. Three gateway processes (`node src/main.ts serve`), the
// invariant suite's mixed load spread over them, against an upstream that counts prompt
// tokens as a chat template does (more than o200k): no overspend, the records add up to the
// counters, no hold left open; with the ledger on PostgreSQL alone and through Redis.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type Cluster, startCluster } from "../support/cluster.ts";
import {
  INVARIANT_SUBJECTS,
  INVARIANT_UPSTREAM,
  loadConfig,
  type MixedLoadResult,
  runMixedLoad,
  seedFrom,
  summarize,
} from "../support/mixed-load.ts";
import { type MockUpstream, startMockUpstream } from "../support/mock-openai-upstream.ts";
import { needsRedis } from "../support/redis-instance.ts";

const REQUESTS = 300;
const SEED = seedFrom(process.env.INVARIANT_SEED);

for (const mode of ["postgres", "postgres+redis"] as const) {
  describe(
    `three instances: the invariants under a mixed load (${mode})`,
    await (mode === "postgres+redis" ? needsRedis() : {}),
    () => {
      let upstream: MockUpstream;
      let cluster: Cluster;
      let result: MixedLoadResult;
      before(async () => {
        upstream = await startMockUpstream({ ...INVARIANT_UPSTREAM, promptCount: "template" });
        cluster = await startCluster({
          instances: 3,
          upstream,
          redis: mode === "postgres+redis",
          config: loadConfig(upstream, { smallPlanQuota: 500 }),
        });
        result = await runMixedLoad(cluster.target, {
          seed: SEED,
          requests: REQUESTS,
          concurrency: REQUESTS,
          ...INVARIANT_SUBJECTS,
          label: mode,
        });
      });
      after(async () => {
        await cluster?.close();
        await upstream?.close();
      });

      it("holds every invariant for every key and account", (t) => {
        t.diagnostic(`seed ${SEED} (INVARIANT_SEED=${SEED} replays the mix)`);
        const { byLabel } = summarize(result);
        t.diagnostic(`outcomes: ${JSON.stringify(Object.fromEntries(byLabel))}`);
        assert.deepEqual(result.report.violations, [], `seed ${SEED}: the books disagree`);
        assert.equal(result.report.openReservations, 0, "no hold left open on any instance");
        assert.equal(result.report.records.length + result.report.unreached, REQUESTS);
        for (const f of [...result.report.keys, ...result.report.accounts])
          if (f.cap !== null) assert.ok(f.stored <= f.cap, `${f.kind} ${f.id}: used ${f.stored} ≤ ${f.cap}`);
        assert.ok(result.report.records.some((r) => r.error_code === "key_limit_exceeded"));
        assert.ok(result.report.records.some((r) => r.error_code === "insufficient_quota"));
      });

      it("the upstream never counted more than was reserved", async () => {
        const row = await cluster.store.db
          .selectFrom("call_records")
          .select((eb) => eb.fn.sum<number>("overrun_tokens").as("overrun"))
          .executeTakeFirstOrThrow();
        assert.equal(Number(row.overrun ?? 0), 0);
      });
    },
  );
}
