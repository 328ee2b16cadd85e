// Memory given back when idle: the policy (released only when a whole window of checks found
// the event loop idle, on the whole and at each check, and the process grew since the last
// release, never twice at once),
// with probes the test drives; and the release itself on this process: a burst's garbage
// leaves the process's resident memory, which a plain collection did not do (decision 0041).
import assert from "node:assert/strict";
import { test } from "node:test";
import { type IdleMemoryProbes, IdleMemoryRelease, processProbes } from "./idle-memory.ts";

const MB = 2 ** 20;

/** Probes whose readings the test sets; release() brings the size down to `floor`. */
function fakeProbes(floor: number) {
  const state = { utilization: 0, rss: 100 * MB, releases: 0, hold: undefined as Promise<void> | undefined };
  const probes: IdleMemoryProbes = {
    utilization: () => state.utilization,
    rss: () => state.rss,
    async release() {
      state.releases++;
      await state.hold;
      state.rss = floor;
    },
  };
  return { state, probes };
}

test("released once a whole window of checks was idle after a growth, and not again until the process grows past what it kept", async () => {
  const { state, probes } = fakeProbes(130 * MB);
  const policy = new IdleMemoryRelease(probes, { growthBytes: 32 * MB, idleChecks: 3 });
  assert.equal(await policy.check(), undefined, "the first check takes the size after start-up");
  state.rss = 120 * MB;
  assert.equal(await policy.check(), undefined, "grew by less than the threshold");
  state.rss = 400 * MB;
  state.utilization = 0.5;
  assert.equal(await policy.check(), undefined, "busy: no collection while calls run");
  state.utilization = 0.01;
  assert.equal(await policy.check(), undefined, "idle for one check");
  assert.equal(await policy.check(), undefined, "idle for two: the busy check is still in the window");
  state.utilization = 0.3;
  assert.equal(await policy.check(), undefined, "calls came: the window holds them for three checks");
  state.utilization = 0.01;
  assert.equal(await policy.check(), undefined);
  assert.equal(await policy.check(), undefined);
  assert.equal(state.releases, 0);
  assert.deepEqual(await policy.check(), { before: 400 * MB, after: 130 * MB }, "three idle checks in a row");
  assert.equal(state.releases, 1);
  assert.equal(await policy.check(), undefined, "nothing grew since");
  state.rss = 150 * MB;
  assert.equal(await policy.check(), undefined, "grown from what the release kept (130), by less than 32");
  state.rss = 170 * MB;
  assert.deepEqual(await policy.check(), { before: 170 * MB, after: 130 * MB });
  assert.equal(state.releases, 2);
});

test("the gateway's own jobs leave a window idle (a check at a few per cent among quiet ones); calls do not", async () => {
  /** a policy over a window of five checks, its size after start-up taken, grown since */
  const grown = async () => {
    const { state, probes } = fakeProbes(100 * MB);
    const policy = new IdleMemoryRelease(probes, { growthBytes: 32 * MB, idleChecks: 5 });
    state.utilization = 0.01;
    await policy.check();
    state.rss = 300 * MB;
    /** the checks at these busy shares, and what the last one decided */
    return async (...utilizations: number[]) => {
      let last: Awaited<ReturnType<typeof policy.check>>;
      for (const utilization of utilizations) {
        state.utilization = utilization;
        last = await policy.check();
      }
      return { last, releases: state.releases };
    };
  };

  // PostgreSQL + Redis idle, as measured: 1-2 % with a job's 5.7 % now and then
  const jobs = await grown();
  assert.deepEqual(await jobs(0.012, 0.057, 0.008, 0.009), {
    last: { before: 300 * MB, after: 100 * MB },
    releases: 1,
  });

  // one check busy with a burst of calls holds it back until it leaves the window
  const burst = await grown();
  assert.deepEqual(await burst(0, 0.15, 0, 0, 0), { last: undefined, releases: 0 });
  assert.deepEqual(
    await burst(0),
    { last: undefined, releases: 0 },
    "five checks since, the burst's among them",
  );
  assert.deepEqual(await burst(0), { last: { before: 300 * MB, after: 100 * MB }, releases: 1 });

  // a steady trickle of calls keeps the window busy on the whole
  const trickle = await grown();
  assert.deepEqual(await trickle(0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03), { last: undefined, releases: 0 });
});

test("a check while a release runs does not start another", async () => {
  const { state, probes } = fakeProbes(100 * MB);
  const policy = new IdleMemoryRelease(probes, { growthBytes: 32 * MB, idleChecks: 1 });
  await policy.check();
  state.rss = 300 * MB;
  let open!: () => void;
  state.hold = new Promise((resolve) => {
    open = resolve;
  });
  const first = policy.check();
  assert.equal(await policy.check(), undefined);
  open();
  assert.deepEqual(await first, { before: 300 * MB, after: 100 * MB });
  assert.equal(state.releases, 1);
});

test("this process's release gives a burst's garbage back to the system", async () => {
  const probes = await processProbes();
  assert.ok(probes, "Node has its inspector here");
  // a burst: many small objects kept long enough to reach the old generation, then dropped
  let burst: unknown[] | undefined = [];
  for (let i = 0; i < 3_000_000; i++) burst.push({ i, s: `piece ${i}` });
  assert.equal(burst.length, 3_000_000);
  burst = undefined;
  const before = probes.rss();
  await probes.release();
  const after = probes.rss();
  assert.ok(before - after > 64 * MB, `resident memory went from ${before / MB} MB to ${after / MB} MB`);
});
