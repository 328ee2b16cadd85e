// Memory given back when idle: the policy (released at the first check after start-up if
// idle, then only when the event loop idled through enough checks in a row and the process
// grew since the last release, never twice at once),
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

test("released at the first check after start-up when idle, with no growth and no long idle", async () => {
  const { state, probes } = fakeProbes(90 * MB);
  const policy = new IdleMemoryRelease(probes, { growthBytes: 32 * MB, idleChecks: 3 });
  assert.deepEqual(await policy.check(), { before: 100 * MB, after: 90 * MB });
  assert.equal(state.releases, 1);
  assert.equal(await policy.check(), undefined, "then the usual rule: nothing grew");
  assert.equal(await policy.check(), undefined);
  assert.equal(await policy.check(), undefined);
  state.rss = 115 * MB;
  assert.equal(
    await policy.check(),
    undefined,
    "grown from what start-up's release kept (90), by less than 32",
  );
  assert.equal(state.releases, 1);
  state.rss = 123 * MB;
  assert.deepEqual(
    await policy.check(),
    { before: 123 * MB, after: 90 * MB },
    "idle long enough, grown by 33",
  );
});

test("released once idle through enough checks after a growth, and not again until the process grows past what it kept", async () => {
  const { state, probes } = fakeProbes(130 * MB);
  const policy = new IdleMemoryRelease(probes, { growthBytes: 32 * MB, idleChecks: 3 });
  state.utilization = 0.4;
  assert.equal(await policy.check(), undefined, "calls from the start: no release after start-up");
  state.utilization = 0;
  state.rss = 120 * MB;
  assert.equal(await policy.check(), undefined, "grew by less than the threshold");
  state.rss = 400 * MB;
  state.utilization = 0.5;
  assert.equal(await policy.check(), undefined, "busy: no collection while calls run");
  state.utilization = 0.01;
  assert.equal(await policy.check(), undefined, "idle for one check");
  assert.equal(await policy.check(), undefined, "idle for two");
  state.utilization = 0.3;
  assert.equal(await policy.check(), undefined, "a call came: the idle count starts again");
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

test("a check while a release runs does not start another", async () => {
  const { state, probes } = fakeProbes(100 * MB);
  const policy = new IdleMemoryRelease(probes, { growthBytes: 32 * MB, idleChecks: 1 });
  state.utilization = 0.4;
  await policy.check();
  state.utilization = 0;
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
