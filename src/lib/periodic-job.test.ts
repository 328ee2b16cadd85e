// The periodic job on node:test's mock timers (the intervals are the test's to advance), and
// in a process of its own for the one thing mock timers cannot show: that it lets a process end.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import { startPeriodicJob } from "./periodic-job.ts";

/** Lets the job's promises settle: mock timers leave setImmediate real. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A run's error fails the test (an unhandled rejection, once thrown in the job). */
const unexpected = (err: unknown) => assert.ifError(err);

/** A run the test ends when it wants. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

test("runs every interval, the first time one interval after it starts", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  let runs = 0;
  const job = startPeriodicJob({ intervalMs: 100, run: async () => void runs++, onError: unexpected });
  await settle();
  assert.equal(runs, 0);
  t.mock.timers.tick(99);
  await settle();
  assert.equal(runs, 0);
  t.mock.timers.tick(1);
  await settle();
  assert.equal(runs, 1);
  for (let i = 0; i < 3; i++) {
    t.mock.timers.tick(100);
    await settle();
  }
  assert.equal(runs, 4);
  await job.stop();
});

test("a tick that finds the last run going is skipped: runs never overlap", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  let runs = 0;
  let inRun = 0;
  let most = 0;
  let slow = gate();
  const job = startPeriodicJob({
    intervalMs: 100,
    run: async () => {
      runs++;
      most = Math.max(most, ++inRun);
      await slow.opened;
      inRun--;
    },
    onError: unexpected,
  });
  for (let i = 0; i < 5; i++) {
    t.mock.timers.tick(100);
    await settle();
  }
  assert.equal(runs, 1, "the four ticks during the slow run did not start another");
  slow.open();
  await settle();
  slow = gate();
  slow.open();
  t.mock.timers.tick(100);
  await settle();
  assert.equal(runs, 2, "the first tick after it ends runs again");
  assert.equal(most, 1);
  await job.stop();
});

test("stop() ends the ticks and resolves only once the run in progress is over", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  let runs = 0;
  let finished = false;
  const slow = gate();
  const job = startPeriodicJob({
    intervalMs: 100,
    run: async () => {
      runs++;
      await slow.opened;
      finished = true;
    },
    onError: unexpected,
  });
  t.mock.timers.tick(100);
  await settle();
  assert.equal(runs, 1);
  let stopped = false;
  const stopping = job.stop().then(() => {
    stopped = true;
  });
  await settle();
  assert.equal(stopped, false, "the run is still going");
  slow.open();
  await stopping;
  assert.equal(finished, true, "stop() resolved after the run ended");
  t.mock.timers.tick(1_000);
  await settle();
  assert.equal(runs, 1, "no tick after stop()");
  await job.stop(); // stopping again, with nothing running, is harmless
});

test("a run's error goes to onError, not to the caller, and the next tick runs again", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  const errors: unknown[] = [];
  let runs = 0;
  const job = startPeriodicJob({
    intervalMs: 100,
    run: async () => {
      if (++runs === 1) throw new Error("store down");
    },
    onError: (err) => errors.push(err),
  });
  t.mock.timers.tick(100);
  await settle();
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /store down/);
  t.mock.timers.tick(100);
  await settle();
  assert.equal(runs, 2);
  assert.equal(errors.length, 1);
  await job.stop();
});

test("a run can stop its own job, once it has nothing left to do", async (t) => {
  t.mock.timers.enable({ apis: ["setInterval"] });
  let runs = 0;
  const job = startPeriodicJob({
    intervalMs: 100,
    run: async () => {
      if (++runs === 2) void job.stop();
    },
    onError: unexpected,
  });
  for (let i = 0; i < 5; i++) {
    t.mock.timers.tick(100);
    await settle();
  }
  assert.equal(runs, 2);
});

test("the timer does not keep the process alive", async () => {
  // The process has a run every 10 ms and nothing else to do after 50 ms: it must end then.
  const script = `
    import { startPeriodicJob } from ${JSON.stringify(import.meta.resolve("./periodic-job.ts"))};
    startPeriodicJob({ intervalMs: 10, run: async () => { process.stdout.write("run "); }, onError: () => {} });
    setTimeout(() => {}, 50);`;
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
    timeout: 10_000,
  });
  assert.match(stdout, /run/, "the job ran while the process lived");
});
