// The login throttle's rules on a SQLite store of the test's own, with the clock in the
// test's hands (the HTTP reproducers, PostgreSQL and two instances: test/login-throttle.test.ts).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createTestDatabase, needsPostgres, type TestDatabase } from "../../test/support/postgres.ts";
import { migrate, openStore, type Store } from "../store/db.ts";
import { clientSource, LOGIN_LIMITS, LoginLimiter } from "./login-limiter.ts";

const S = 1_000;
const MIN = 60 * S;
let store: Store;
let dir: string;
let limiter: LoginLimiter;
let n = 0;
/** a fresh e-mail and address per test, so the tests share a store and nothing else */
const fresh = () => ({ email: `u${++n}@x`, ip: `10.${n}.0.1` });

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "gw-login-limiter-"));
  store = openStore({ data_dir: dir });
  await migrate(store);
  limiter = new LoginLimiter(store.db, store.dialect);
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const wait = async (email: string, ip: string, now: number) =>
  (await limiter.attempt(email, ip, now)).retryAfterMs;

test("5 failures from one address at one e-mail are free, then waits of 1 s, 2 s, 4 s … up to 15 minutes", async () => {
  const { email, ip } = fresh();
  let t = 1_000_000;
  for (let i = 0; i < 5; i++) assert.equal(await wait(email, ip, t++), 0, `attempt ${i + 1}`);
  const waits: number[] = [];
  for (let i = 0; i < 30; i++) {
    const w = await wait(email, ip, t);
    waits.push(Math.round(w / S));
    t += w;
    assert.equal(await wait(email, ip, t), 0, `admitted once its wait is over (${i})`);
  }
  // one failure is forgotten per 15 minutes waited: the 1,023 s of the first ten waits forget one
  assert.deepEqual(waits.slice(0, 12), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 512, 900]);
  // then about four guesses an hour
  assert.deepEqual(new Set(waits.slice(12)), new Set([900]));
});

test("wrong passwords from one address do not slow the right one from another (no lockout)", async () => {
  const { email, ip } = fresh();
  for (let i = 0; i < 10; i++) await limiter.attempt(email, ip, 5_000 + i);
  assert.ok((await wait(email, ip, 5_100)) > 0);
  assert.equal(await wait(email, "10.200.0.2", 5_100), 0);
  await limiter.succeed(email, "10.200.0.2", 5_200);
});

test("an attempt is counted when it is admitted, before its outcome is known", async () => {
  const { email, ip } = fresh();
  // as concurrent logins do: every attempt is admitted or refused before any password check ends
  const answers = await Promise.all(Array.from({ length: 40 }, () => limiter.attempt(email, ip, 5_000)));
  assert.equal(answers.filter((a) => a.retryAfterMs === 0).length, LOGIN_LIMITS.pair.free);
});

test("two instances on one store count every attempt", async () => {
  const { email, ip } = fresh();
  const other = new LoginLimiter(store.db, store.dialect);
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, i) => (i % 2 ? other : limiter).attempt(email, ip, 5_000)),
  );
  assert.equal(answers.filter((a) => a.retryAfterMs === 0).length, LOGIN_LIMITS.pair.free);
});

test("a refused attempt does not count", async () => {
  const { email, ip } = fresh();
  for (let i = 0; i < 5; i++) await limiter.attempt(email, ip, 1_000);
  for (let i = 0; i < 10; i++) assert.equal(await wait(email, ip, 1_500), 500);
  assert.equal(await wait(email, ip, 2_000), 0, "still the first wait: the refusals added nothing");
  assert.equal(await wait(email, ip, 2_000), 2 * S);
});

test("the backoff runs from when a failure was answered, not from its admission", async () => {
  const { email, ip } = fresh();
  for (let i = 0; i < 5; i++) await limiter.attempt(email, ip, 1_000);
  // the last password check took 3 s
  await limiter.failed(email, ip, 4_000);
  assert.equal(await wait(email, ip, 4_200), 800);
});

test("20 failures from one address slow every e-mail from it, not other addresses", async () => {
  const { ip } = fresh();
  for (let i = 0; i < 20; i++) assert.equal(await wait(`spray${i}@${ip}`, ip, 5_000 + i), 0);
  assert.equal(await wait("new@x", ip, 6_000), 1 * S - 981);
  assert.equal(await wait("new@x", "10.250.0.1", 6_000), 0);
});

test("many addresses at one e-mail: past 50 failures a minute apart at most; its user's addresses are not slowed", async () => {
  const { email } = fresh();
  const home = "10.99.0.1";
  // the user logged in from home before
  assert.equal(await wait(email, home, 1_000), 0);
  await limiter.succeed(email, home, 1_000);
  // ten addresses, five guesses each: the e-mail holds 50 failures
  let t = 2_000;
  for (let a = 0; a < 10; a++)
    for (let i = 0; i < 5; i++) assert.equal(await wait(email, `10.98.${a}.1`, t++), 0);
  const waits: number[] = [];
  for (let a = 10; a < 20; a++) {
    const w = await wait(email, `10.98.${a}.1`, t);
    waits.push(Math.round(w / S));
    t += w;
    assert.equal(await wait(email, `10.98.${a}.1`, t), 0);
  }
  assert.deepEqual(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
  // the slowdown is the e-mail's: from home, the user is let in at once
  assert.equal(await wait(email, home, t), 0);
  // and not a lockout elsewhere either: once a minute has passed, a new address is let in
  assert.equal(await wait(email, "10.97.0.1", t + MIN), 0);
});

test("a successful login clears its pair's failures and takes back only its own count elsewhere", async () => {
  const { email, ip } = fresh();
  for (let i = 0; i < 5; i++) await limiter.attempt(`other${i}-${email}`, ip, 1_000);
  for (let i = 0; i < 5; i++) await limiter.attempt(email, ip, 1_000);
  assert.equal(await wait(email, ip, 1_000), S);
  // the right password after its wait
  assert.equal(await wait(email, ip, 2_000), 0);
  await limiter.succeed(email, ip, 2_000);
  for (let i = 0; i < 5; i++) assert.equal(await wait(email, ip, 3_000), 0, `free again (${i})`);
  // the address counts 5 failures at other e-mails, 5 + 1 - 1 at this one (the success took its
  // own back) and 5 since: 15; four more and one last are its 20 free ones
  for (let i = 0; i < 4; i++) assert.equal(await wait(`more${i}-${email}`, ip, 3_000), 0);
  assert.equal(await wait(`last-${email}`, ip, 3_000), 0, "the 20th failure");
  assert.ok((await wait(`late-${email}`, ip, 3_000)) > 0);
});

test("a counter forgets one failure every 15 minutes", async () => {
  const a = fresh();
  const b = fresh();
  for (let i = 0; i < 5; i++) {
    await limiter.attempt(a.email, a.ip, 0);
    await limiter.attempt(b.email, b.ip, 0);
  }
  // a moment before 15 minutes all five count: one more, and the next waits 2 s
  assert.equal(await wait(a.email, a.ip, 15 * MIN - 1), 0);
  assert.equal(await wait(a.email, a.ip, 15 * MIN - 1), 2 * S);
  // at 15 minutes one is forgotten: one more, and the next waits 1 s
  assert.equal(await wait(b.email, b.ip, 15 * MIN), 0);
  assert.equal(await wait(b.email, b.ip, 15 * MIN), S);
  // 75 minutes after their last failure, all five are forgotten: five free attempts again
  for (let i = 0; i < 5; i++) assert.equal(await wait(b.email, b.ip, 90 * MIN), 0);
  assert.equal(await wait(b.email, b.ip, 90 * MIN), S);
});

test("rows that count nothing and trust no one are deleted", async () => {
  const a = fresh();
  const b = fresh();
  const later = 10_000_000_000;
  await limiter.attempt(a.email, a.ip, later);
  await limiter.attempt(b.email, b.ip, later);
  await limiter.succeed(b.email, b.ip, later);
  const rows = async () =>
    Number(
      (
        await store.db
          .selectFrom("login_throttle")
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const day = 24 * 60 * MIN;
  assert.equal(await limiter.purge(later + 17 * 60 * MIN), 0, "a level of 70 could still be counting");
  await limiter.purge(later + day);
  // b's pair stays while it is trusted, 30 days from its success
  assert.equal(await rows(), 1);
  await limiter.purge(later + 31 * day);
  assert.equal(await rows(), 0);
});

test("an address counts as itself; IPv6 by its /64; IPv4-mapped IPv6 as the IPv4 address", () => {
  assert.equal(clientSource("192.0.2.7"), "192.0.2.7");
  assert.equal(clientSource("::ffff:192.0.2.7"), "192.0.2.7");
  assert.equal(clientSource("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::/64");
  assert.equal(clientSource("2001:db8:1:2::1"), "2001:db8:1:2::/64");
  assert.equal(clientSource("2001:0DB8:0001:0002:0:0:0:9"), "2001:db8:1:2::/64");
  assert.equal(clientSource("2001:db8::1"), "2001:db8:0:0::/64");
  assert.equal(clientSource("::1"), "0:0:0:0::/64");
  assert.equal(clientSource("fe80::1%eth0"), "fe80:0:0:0::/64");
  assert.equal(clientSource("::ffff:0:1.2.3.4"), "0:0:0:0::/64");
});

describe("on PostgreSQL, a burst at one e-mail from many addresses", await needsPostgres(), () => {
  let database: TestDatabase;
  let pgStore: Store;
  before(async () => {
    database = await createTestDatabase();
    pgStore = openStore({ data_dir: "unused", database_url: database.url });
    await migrate(pgStore);
  });
  after(async () => {
    await pgStore.close();
    await database.drop();
  });

  test("attempts, failures and successes together never fail on each other's row locks", async () => {
    // the counters of one e-mail are shared by every address: an attempt holds them in key order
    // while failures and successes of the others update them
    const pg = new LoginLimiter(pgStore.db, pgStore.dialect);
    const email = "burst@x";
    const t = Date.now();
    const results = await Promise.allSettled(
      Array.from({ length: 120 }, async (_, i) => {
        const ip = `10.9.${i % 12}.1`;
        await pg.attempt(email, ip, t);
        if (i % 5 === 0) await pg.succeed(email, ip, t);
        else await pg.failed(email, ip, t);
      }),
    );
    const failures = results.filter((r) => r.status === "rejected");
    assert.deepEqual(
      failures.map((r) => String((r as PromiseRejectedResult).reason)),
      [],
    );
  });
});
