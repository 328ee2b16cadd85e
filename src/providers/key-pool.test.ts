import assert from "node:assert/strict";
import { test } from "node:test";
import { KeyPool, keyHint, RATE_LIMITED_MAX_MS, RATE_LIMITED_MS, REFUSED_MS } from "./key-pool.ts";

const KEYS = ["sk-alpha-0001", "sk-bravo-0002", "sk-charlie-0003"];

function clocked(keys = KEYS) {
  const clock = { now: 1_000_000 };
  const pool = new KeyPool(keys, { now: () => clock.now });
  return { pool, clock };
}

const picks = (pool: KeyPool, n: number) => Array.from({ length: n }, () => pool.pick());

test("the keys are used in turn", () => {
  const { pool } = clocked();
  assert.deepEqual(picks(pool, 6), [...KEYS, ...KEYS]);
  assert.deepEqual(
    pool.states().map((s) => s.calls),
    [2, 2, 2],
  );
});

test("no key: nothing to pick, nothing to show", () => {
  const pool = new KeyPool([]);
  assert.equal(pool.pick(), undefined);
  assert.equal(pool.size, 0);
  assert.deepEqual(pool.states(), []);
});

test("an empty or repeated key is left out", () => {
  const pool = new KeyPool(["sk-alpha-0001", "", "sk-alpha-0001", "sk-bravo-0002"]);
  assert.equal(pool.size, 2);
  assert.deepEqual(picks(pool, 3), ["sk-alpha-0001", "sk-bravo-0002", "sk-alpha-0001"]);
});

test("a cooling key is skipped until its cooldown ends", () => {
  const { pool, clock } = clocked();
  pool.cool(KEYS[1]!, "rate_limited");
  assert.deepEqual(picks(pool, 4), [KEYS[0], KEYS[2], KEYS[0], KEYS[2]]);
  clock.now += RATE_LIMITED_MS;
  assert.deepEqual(picks(pool, 3), [KEYS[0], KEYS[1], KEYS[2]]);
});

test("a 429 honours retry-after, bounded", () => {
  const { pool, clock } = clocked();
  pool.cool(KEYS[0]!, "rate_limited", 2_000);
  assert.equal(pool.states()[0]!.cooling_until, clock.now + 2_000);
  pool.cool(KEYS[1]!, "rate_limited", 86_400_000);
  assert.equal(pool.states()[1]!.cooling_until, clock.now + 3_600_000, "a day's retry-after is an hour");
  pool.cool(KEYS[2]!, "rate_limited", 0);
  assert.equal(pool.states()[2]!.state, "ready", "retry-after 0: ready at once");
});

test("429s in a row without retry-after cool for longer each time, up to the cap; a success starts over", () => {
  const { pool, clock } = clocked();
  const lengths: number[] = [];
  for (let i = 0; i < 6; i++) {
    pool.cool(KEYS[0]!, "rate_limited");
    lengths.push(pool.states()[0]!.cooling_until! - clock.now);
    clock.now += lengths.at(-1)!;
  }
  assert.deepEqual(lengths, [30_000, 60_000, 120_000, 240_000, RATE_LIMITED_MAX_MS, RATE_LIMITED_MAX_MS]);
  assert.equal(pool.states()[0]!.failures, 6);
  pool.succeeded(KEYS[0]!);
  assert.equal(pool.states()[0]!.failures, 0);
  pool.cool(KEYS[0]!, "rate_limited");
  assert.equal(pool.states()[0]!.cooling_until! - clock.now, RATE_LIMITED_MS);
});

test("a refused key cools for longer, whatever it is refused with", () => {
  const { pool, clock } = clocked();
  pool.cool(KEYS[0]!, "unauthorized");
  pool.cool(KEYS[1]!, "forbidden");
  pool.cool(KEYS[2]!, "key_invalid");
  for (const s of pool.states()) assert.equal(s.cooling_until, clock.now + REFUSED_MS);
  assert.deepEqual(
    pool.states().map((s) => s.last_error),
    ["401 authentication failed", "403 permission denied", "400 key invalid"],
  );
});

test("a shorter cooldown never shortens a longer one", () => {
  const { pool, clock } = clocked();
  pool.cool(KEYS[0]!, "unauthorized");
  pool.cool(KEYS[0]!, "rate_limited", 1_000);
  assert.equal(pool.states()[0]!.cooling_until, clock.now + REFUSED_MS);
  assert.equal(pool.states()[0]!.last_error, "429 rate limited");
});

test("every key cooling: the one whose cooldown ends first is used, never none", () => {
  const { pool, clock } = clocked();
  pool.cool(KEYS[0]!, "unauthorized");
  pool.cool(KEYS[1]!, "rate_limited", 5_000);
  pool.cool(KEYS[2]!, "rate_limited", 10_000);
  assert.deepEqual(picks(pool, 2), [KEYS[1], KEYS[1]]);
  assert.equal(pool.hasReady(new Set()), false);
  clock.now += 5_000;
  assert.equal(pool.hasReady(new Set()), true);
  assert.equal(pool.pick(), KEYS[1]);
});

test("pick and hasReady pass over the keys a call has tried", () => {
  const { pool } = clocked();
  const tried = new Set([KEYS[0]!, KEYS[1]!]);
  assert.equal(pool.hasReady(tried), true);
  assert.equal(pool.pick(tried), KEYS[2]);
  tried.add(KEYS[2]!);
  assert.equal(pool.hasReady(tried), false);
});

test("states: the hint, the state, the failures, the last error, the calls; never the key", () => {
  const { pool, clock } = clocked();
  pool.pick();
  pool.cool(KEYS[0]!, "rate_limited", 2_000);
  assert.deepEqual(pool.states(), [
    {
      index: 0,
      hint: "…0001",
      state: "cooling",
      cooling_until: clock.now + 2_000,
      failures: 1,
      last_error: "429 rate limited",
      calls: 1,
    },
    { index: 1, hint: "…0002", state: "ready", cooling_until: null, failures: 0, last_error: null, calls: 0 },
    { index: 2, hint: "…0003", state: "ready", cooling_until: null, failures: 0, last_error: null, calls: 0 },
  ]);
  clock.now += 2_000;
  assert.equal(pool.states()[0]!.state, "ready");
  assert.equal(pool.states()[0]!.last_error, "429 rate limited", "the last error stays as history");
});

test("a hint is at most the last four characters, and never most of a short key", () => {
  assert.equal(keyHint("sk-proj-abcdefgh1234"), "…1234");
  assert.equal(keyHint("abcdefghijkl"), "…ijkl");
  assert.equal(keyHint("abcdefgh"), "…gh");
  assert.equal(keyHint("abcd"), "…d");
  assert.equal(keyHint("ab"), "…");
});
