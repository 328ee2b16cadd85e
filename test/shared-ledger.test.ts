// The shared ledgers, as two instances in one process on one PostgreSQL store (and Redis):
// holds are atomic across instances, a waiter on one is let in when a hold on the other
// closes, a dead instance's holds are swept, and (Redis) a flush while holds are in flight is
// rebuilt from the store without counting a charge twice or losing a hold. The same for money:
// a hold is sized by what the budgets pay for, refused below the minimum with the budget's
// reason and what it leaves, charged at most what it held, given back on release and sweep,
// and a monthly budget starts again with the month of the ledger's clock.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import pg from "pg";
import { createAccount } from "../src/accounts/accounts.ts";
import { setBudget } from "../src/accounts/budgets.ts";
import { createKey } from "../src/accounts/keys.ts";
import { InstanceLease } from "../src/ledger/instances.ts";
import { chargeable, NO_MONEY, nanosFor, tokensFor } from "../src/ledger/money.ts";
import { PostgresLedger } from "../src/ledger/postgres-ledger.ts";
import { RedisLedger } from "../src/ledger/redis-ledger.ts";
import type {
  CostRule,
  Ledger,
  LedgerSubject,
  MoneyBudget,
  MoneyCounter,
  Reservation,
  SessionCounter,
  SessionSubject,
} from "../src/ledger/types.ts";
import { createLogger } from "../src/observability/logger.ts";
import { monthOf } from "../src/prices/period.ts";
import { RedisRecordJournal } from "../src/records/redis-journal.ts";
import { RecordWriter } from "../src/records/writer.ts";
import { migrate, openStore, type Store } from "../src/store/db.ts";
import { RedisState } from "../src/store/redis-state.ts";
import { callRecord } from "./support/call-record.ts";
import { createTestDatabase, type TestDatabase } from "./support/postgres.ts";
import { watchRedisCommands } from "./support/redis.ts";
import {
  dropRedisKeys,
  flushRedisKeys,
  needsRedis,
  redisPrefix,
  TEST_REDIS_URL,
} from "./support/redis-instance.ts";
import { until } from "./support/stream-assertions.ts";

const logger = createLogger("silent");

/** The clock of every ledger and writer here: a test moves it to the next month. */
let shift = 0;
const now = () => Date.now() + shift;

/**
 * A call's cost rule: a prompt bound of 60 tokens at $3 per million (and the 3 nanodollars of
 * rounding margin the pricing adds), output at $15 per million. Wanted: the prompt and 100
 * output tokens; minimum: the prompt and 16.
 */
const RULE: CostRule = { fixed: 180_003, perToken: 15_000, promptTokens: 60 };
const WANTED = 160;
const MINIMUM = 76;
const cost = { cost: RULE };

interface Instance {
  ledger: Ledger & {
    inspect(kind: "account" | "key", id: string): Promise<{ used: number; reserved: number } | undefined>;
    inspectMoney(kind: "account" | "key", id: string): Promise<MoneyCounter | undefined>;
    inspectSession(keyId: string, sessionId: string): Promise<SessionCounter | undefined>;
    openHolds(): Promise<number>;
    sweep(): Promise<number>;
  };
  lease: InstanceLease;
  writer: RecordWriter;
  /** its Redis connection (Redis's ledger only) */
  redis: RedisState | undefined;
  stop(): Promise<void>;
}

function record(subject: LedgerSubject, tokens: number, nanos = 0) {
  return callRecord({
    account_id: subject.accountId,
    key_id: subject.keyId,
    prompt_tokens: tokens,
    cost_nanos: nanos,
    ...(subject.session ? { session_id: subject.session.id, session_client: "header" } : {}),
  });
}

/**
 * The finisher's order: the record (ending the hold in the store) with the cost as charged,
 * never beyond what the hold held, then the settle with the cost as computed.
 */
async function finish(
  i: Instance,
  subject: LedgerSubject,
  r: Reservation,
  tokens: number,
  nanos = 0,
): Promise<void> {
  await i.writer.write(record(subject, tokens, chargeable(r, nanos)), r);
  await i.ledger.settle(r, tokens, nanos);
}

/** A key limited to `limit` tokens on an account of a million, with the budgets given (nanodollars). */
async function keySubject(
  store: Store,
  limit: number,
  budgets: { key?: MoneyBudget; account?: MoneyBudget } = {},
): Promise<LedgerSubject> {
  const account = await createAccount(store.db, {
    name: `acct-${randomUUID()}`,
    plan_id: "p",
    quota_tokens: 1_000_000,
  });
  const { key } = await createKey(store.db, {
    account_id: account.id,
    name: null,
    limit_tokens: limit,
  });
  if (budgets.key) await setBudget(store.db, "api_keys", key.id, budgets.key.limit, budgets.key.period);
  if (budgets.account)
    await setBudget(store.db, "accounts", account.id, budgets.account.limit, budgets.account.period);
  return {
    accountId: account.id,
    accountQuota: 1_000_000,
    accountUsed: 0,
    keyId: key.id,
    keyLimit: limit,
    keyUsed: 0,
    ...NO_MONEY,
    accountBudget: budgets.account ?? null,
    keyBudget: budgets.key ?? null,
  };
}

for (const kind of ["postgres", "redis"] as const) {
  describe(
    `the shared ledger on ${kind}, two instances`,
    await (kind === "redis" ? needsRedis() : {}),
    () => {
      let database: TestDatabase;
      let store: Store;
      const prefix = redisPrefix();
      const instances: Instance[] = [];
      let subject: LedgerSubject;

      /** `journalMs` (Redis): how late a hold's journal row may land (the ledger's default if not given) */
      async function instance(id = randomUUID(), leaseMs = 15_000, journalMs?: number): Promise<Instance> {
        const options = { url: database.url, instanceId: id, waitMs: 5_000, leaseMs, logger, now, journalMs };
        const redis = kind === "redis" ? new RedisState(TEST_REDIS_URL, prefix, logger) : undefined;
        const ledger = redis ? new RedisLedger(redis, store, options) : new PostgresLedger(store.db, options);
        const lease = new InstanceLease(store, {
          id,
          redis: !!redis,
          leaseMs,
          logger,
          sweep: () => ledger.sweep(),
        });
        await lease.start();
        await ledger.start();
        // as the gateway's start does: up before it is asked (a loaded machine connects late)
        if (redis) assert.ok(await redis.connected(5_000), "the test's Redis answers");
        const writer = new RecordWriter(store.db, { onError: () => {}, holds: ledger, now });
        const made: Instance = {
          ledger,
          lease,
          writer,
          redis,
          async stop() {
            await ledger.stop();
            await lease.stop();
            await redis?.close();
          },
        };
        instances.push(made);
        return made;
      }

      before(async () => {
        database = await createTestDatabase();
        store = openStore({ data_dir: ".", database_url: database.url });
        await migrate(store);
      });
      after(async () => {
        for (const i of instances) await i.stop().catch(() => undefined);
        await store.close();
        await database.drop();
        if (kind === "redis") await dropRedisKeys(TEST_REDIS_URL, prefix);
      });

      const newSubject = (limit: number, budgets: { key?: MoneyBudget; account?: MoneyBudget } = {}) =>
        keySubject(store, limit, budgets);

      /** What the store says was spent, and what the records charged, for a key or account. */
      async function books(kind: "account" | "key", id: string) {
        const row = await store.db
          .selectFrom(kind === "key" ? "api_keys" : "accounts")
          .select(["spent_nanos", "month_spent_nanos", "spent_month"])
          .where("id", "=", id)
          .executeTakeFirstOrThrow();
        const records = await store.db
          .selectFrom("call_records")
          .select((eb) => eb.fn.sum<number>("cost_nanos").as("n"))
          .where(kind === "key" ? "key_id" : "account_id", "=", id)
          .executeTakeFirstOrThrow();
        return {
          spent: {
            total: Number(row.spent_nanos),
            month: Number(row.month_spent_nanos),
            monthKey: row.spent_month,
          },
          recorded: Number(records.n ?? 0),
        };
      }

      /** The shared state's money of a key or account agrees with the store and the records. */
      async function agreed(i: Instance, kind: "account" | "key", id: string): Promise<MoneyCounter> {
        const money = (await i.ledger.inspectMoney(kind, id))!;
        const b = await books(kind, id);
        assert.deepEqual(money.spent, b.spent, "the shared state's spending is the store's");
        assert.equal(b.spent.total, b.recorded, "the records add up to what was spent");
        return money;
      }

      test("holds are atomic across instances: 40 concurrent asks of 30 on a 300-token key hold 10", async () => {
        const [a, b] = [await instance(), await instance()];
        subject = await newSubject(300);
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, n) =>
            (n % 2 ? a : b).ledger.reserve(subject, 30, 30, { signal: AbortSignal.abort() }),
          ),
        );
        const held = results.filter((r) => r.ok);
        assert.equal(held.length, 10);
        assert.deepEqual(await a.ledger.inspect("key", subject.keyId), { used: 0, reserved: 300 });
        for (const [n, r] of results.entries())
          if (r.ok) await finish(n % 2 ? a : b, subject, r.reservation, 10);
        assert.deepEqual(await b.ledger.inspect("key", subject.keyId), { used: 100, reserved: 0 });
        assert.equal(await a.ledger.openHolds(), 0);
      });

      test("a waiter on one instance is let in when a hold on the other closes", async () => {
        const [a, b] = instances;
        const s = await newSubject(100);
        const first = await a!.ledger.reserve(s, 100, 50);
        assert.ok(first.ok);
        const waiting = b!.ledger.reserve(s, 100, 50);
        await new Promise((r) => setTimeout(r, 50));
        await finish(a!, s, first.reservation, 40);
        const second = await waiting;
        assert.ok(second.ok, "let in, not refused");
        assert.equal(second.reservation.tokens, 60);
        await finish(b!, s, second.reservation, 60);
        assert.deepEqual(await a!.ledger.inspect("key", s.keyId), { used: 100, reserved: 0 });
      });

      if (kind === "postgres")
        test("the ledger's listener is named in pg_stat_activity, apart from the store's pool", async () => {
          await instance();
          const rows = await sql<{ application_name: string }>`select application_name from pg_stat_activity
            where datname = current_database() and query like 'listen %'`.execute(store.db);
          assert.ok(rows.rows.length > 0, "the instances listen");
          assert.deepEqual(
            new Set(rows.rows.map((r) => r.application_name)),
            new Set(["chat-gateway ledger"]),
          );
        });

      test("the holds of an instance whose lease ran out are released by another's sweep", async () => {
        const s = await newSubject(1_000);
        const dying = await instance(randomUUID(), 400);
        // no more renewals: as if it crashed; stopped whatever happens, or its fast sweeps would
        // take the next tests' expired holds before the instance they ask does
        const r = await dying.ledger
          .reserve(s, 700, 700)
          .finally(() => dying.lease.stop().catch(() => undefined));
        assert.ok(r.ok);
        const other = instances[0]!;
        const denied = await other.ledger.reserve(s, 500, 500, { signal: AbortSignal.abort() });
        assert.equal(denied.ok, false);
        await new Promise((resolve) => setTimeout(resolve, 500));
        // this sweep, or the others' periodic one that came first: what it released is not the point
        await other.ledger.sweep();
        assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 0, reserved: 0 });
        const granted = await other.ledger.reserve(s, 500, 500);
        assert.ok(granted.ok);
        await finish(other, s, granted.reservation, 1);
      });

      test("a hold is sized by the budget: fewer tokens when it pays for less output", async () => {
        const [a, b] = instances;
        const budget = nanosFor(RULE, 110); // the prompt and 50 output tokens
        const s = await newSubject(100_000, { key: { limit: budget, period: "none" } });
        const first = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(first.ok);
        assert.equal(first.reservation.tokens, 110);
        assert.equal(first.reservation.nanos, budget);
        assert.deepEqual(first.reservation.holdsNanos, { account: false, key: true });
        assert.deepEqual(a!.ledger.money("key", s.keyId), { used: 0, reserved: budget });
        assert.equal((await a!.ledger.inspectMoney("key", s.keyId))!.reserved, budget);
        // the other instance: the budget is all held by a call in flight
        assert.deepEqual(
          await b!.ledger.reserve(s, WANTED, MINIMUM, { ...cost, signal: AbortSignal.abort() }),
          {
            ok: false,
            reason: "key_budget",
            remaining: budget,
            held: true,
          },
        );
        const spent = budget - nanosFor(RULE, MINIMUM);
        await finish(a!, s, first.reservation, 80, spent);
        assert.deepEqual(await agreed(b!, "key", s.keyId), {
          spent: { total: spent, month: spent, monthKey: monthOf(now()) },
          reserved: 0,
        });
        // what is left pays for exactly the minimum
        const second = await b!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(second.ok);
        assert.equal(second.reservation.tokens, MINIMUM);
        assert.equal(second.reservation.nanos, nanosFor(RULE, MINIMUM));
        await finish(b!, s, second.reservation, 70, nanosFor(RULE, MINIMUM));
        assert.equal(
          (await agreed(a!, "key", s.keyId)).spent.total,
          budget,
          "spent the whole budget, not more",
        );
      });

      test("held and charged to the nanodollar as the in-process ledger computes, fractional prices too", async () => {
        const [a] = instances;
        const rule: CostRule = { fixed: 1_001, perToken: 37.5, promptTokens: 10 };
        for (const budget of [4_788, 4_787, 1_001, 1_000_003]) {
          const s = await newSubject(100_000, { account: { limit: budget, period: "none" } });
          const r = await a!.ledger.reserve(s, 5_000, 10, { cost: rule });
          assert.ok(r.ok, `a budget of ${budget}`);
          const tokens = Math.min(5_000, tokensFor(rule, budget));
          assert.equal(r.reservation.tokens, tokens, `a budget of ${budget}`);
          assert.equal(r.reservation.nanos, nanosFor(rule, tokens), `a budget of ${budget}`);
          assert.deepEqual(r.reservation.holdsNanos, { account: true, key: false });
          await a!.ledger.release(r.reservation);
        }
      });

      test("refused below the minimum, naming the budget and what it leaves", async () => {
        const [a, b] = instances;
        const s = await newSubject(100_000, {
          account: { limit: 1_000_000, period: "none" },
          key: { limit: 5_000_000, period: "none" },
        });
        const first = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(first.ok);
        assert.equal(
          first.reservation.tokens,
          tokensFor(RULE, 1_000_000),
          "the account's budget is the tighter",
        );
        assert.deepEqual(first.reservation.holdsNanos, { account: true, key: true });
        await finish(a!, s, first.reservation, 60, 600_000);
        assert.deepEqual(await b!.ledger.reserve(s, WANTED, MINIMUM, cost), {
          ok: false,
          reason: "account_budget",
          remaining: 400_000,
          held: false,
        });
        assert.deepEqual(await agreed(b!, "account", s.accountId), {
          spent: { total: 600_000, month: 600_000, monthKey: monthOf(now()) },
          reserved: 0,
        });
        assert.equal((await agreed(b!, "key", s.keyId)).spent.total, 600_000);
        // a call that costs nothing is not limited by budgets
        const free = await b!.ledger.reserve(s, WANTED, MINIMUM);
        assert.ok(free.ok);
        assert.equal(free.reservation.nanos, null);
        await finish(b!, s, free.reservation, 10);
      });

      test("a charge is never more than the hold held; a release gives the money back", async () => {
        const [a, b] = instances;
        const budget = 4_000_000;
        const s = await newSubject(100_000, { key: { limit: budget, period: "none" } });
        const released = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(released.ok);
        const held = nanosFor(RULE, WANTED);
        assert.equal(released.reservation.nanos, held);
        await a!.ledger.release(released.reservation);
        assert.deepEqual(await agreed(b!, "key", s.keyId), {
          spent: { total: 0, month: 0, monthKey: "" },
          reserved: 0,
        });
        const r = await b!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(r.ok);
        assert.equal(r.reservation.nanos, held, "the whole hold again");
        await finish(b!, s, r.reservation, WANTED, held * 10); // the upstream reported ten times more
        assert.equal((await agreed(a!, "key", s.keyId)).spent.total, held);
        const next = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(next.ok);
        assert.equal(next.reservation.nanos, held, `${budget - held} left`);
        await finish(a!, s, next.reservation, 1, 1);
        assert.deepEqual(await agreed(a!, "key", s.keyId), {
          spent: { total: held + 1, month: held + 1, monthKey: monthOf(now()) },
          reserved: 0,
        });
      });

      test("money holds are atomic across instances: 40 concurrent asks, a budget that pays for 10", async () => {
        const [a, b] = instances;
        const each = nanosFor(RULE, MINIMUM);
        const s = await newSubject(1_000_000, { key: { limit: each * 10 + each - 1, period: "none" } });
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, n) =>
            (n % 2 ? a : b)!.ledger.reserve(s, MINIMUM, MINIMUM, { ...cost, signal: AbortSignal.abort() }),
          ),
        );
        assert.equal(results.filter((r) => r.ok).length, 10);
        for (const r of results) if (!r.ok) assert.equal(r.reason, "key_budget");
        assert.equal((await a!.ledger.inspectMoney("key", s.keyId))!.reserved, each * 10);
        for (const [n, r] of results.entries())
          if (r.ok) await finish((n % 2 ? a : b)!, s, r.reservation, MINIMUM, each);
        assert.deepEqual(await agreed(b!, "key", s.keyId), {
          spent: { total: each * 10, month: each * 10, monthKey: monthOf(now()) },
          reserved: 0,
        });
        assert.deepEqual(await a!.ledger.reserve(s, MINIMUM, MINIMUM, cost), {
          ok: false,
          reason: "key_budget",
          remaining: each - 1,
          held: false,
        });
      });

      test("a waiter for held money is let in when the hold closes on the other instance", async () => {
        const [a, b] = instances;
        const s = await newSubject(100_000, { key: { limit: nanosFor(RULE, WANTED), period: "none" } });
        const first = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(first.ok);
        const waiting = b!.ledger.reserve(s, WANTED, MINIMUM, cost);
        await new Promise((r) => setTimeout(r, 50));
        await finish(a!, s, first.reservation, 70, nanosFor(RULE, 80));
        const second = await waiting;
        assert.ok(second.ok, "let in, not refused");
        assert.equal(
          second.reservation.tokens,
          tokensFor(RULE, nanosFor(RULE, WANTED) - nanosFor(RULE, 80)),
          "what the first call did not spend",
        );
        await finish(b!, s, second.reservation, 10, 0);
      });

      test("a monthly budget starts again with the month of the ledger's clock", async () => {
        const [a, b] = instances;
        const budget = 1_000_000;
        const s = await newSubject(100_000, { key: { limit: budget, period: "month" } });
        const thisMonth = monthOf(now());
        const first = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(first.ok);
        await finish(a!, s, first.reservation, 60, 700_000);
        assert.deepEqual(await b!.ledger.reserve(s, WANTED, MINIMUM, cost), {
          ok: false,
          reason: "key_budget",
          remaining: 300_000,
          held: false,
        });
        const d = new Date(now());
        shift += Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1, 0, 1) - now();
        try {
          const nextMonth = monthOf(now());
          assert.notEqual(nextMonth, thisMonth);
          const r = await b!.ledger.reserve(s, WANTED, MINIMUM, cost);
          assert.ok(r.ok, "the new month's budget is whole");
          assert.equal(r.reservation.tokens, Math.min(WANTED, tokensFor(RULE, budget)));
          await finish(b!, s, r.reservation, 60, 200_000);
          assert.deepEqual(await agreed(a!, "key", s.keyId), {
            spent: { total: 900_000, month: 200_000, monthKey: nextMonth },
            reserved: 0,
          });
        } finally {
          shift = 0;
        }
      });

      test("the money held by an instance whose lease ran out is released by another's sweep", async () => {
        const budget = nanosFor(RULE, WANTED);
        const s = await newSubject(100_000, {
          account: { limit: budget, period: "month" },
          key: { limit: budget, period: "none" },
        });
        const dying = await instance(randomUUID(), 400);
        const r = await dying.ledger
          .reserve(s, WANTED, MINIMUM, cost)
          .finally(() => dying.lease.stop().catch(() => undefined));
        assert.ok(r.ok);
        const other = instances[0]!;
        assert.equal((await other.ledger.inspectMoney("account", s.accountId))!.reserved, budget);
        await new Promise((resolve) => setTimeout(resolve, 500));
        // this sweep, or the others' periodic one that came first: what it released is not the point
        await other.ledger.sweep();
        assert.equal((await agreed(other, "account", s.accountId)).reserved, 0);
        assert.equal((await agreed(other, "key", s.keyId)).reserved, 0);
        const granted = await other.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(granted.ok);
        assert.equal(granted.reservation.nanos, budget);
        await finish(other, s, granted.reservation, 1, 1);
      });

      /** An instance with a 400 ms lease that no longer renews it: as if it crashed. */
      async function dyingInstance(): Promise<Instance> {
        const dying = await instance(randomUUID(), 400);
        await dying.lease.stop();
        return dying;
      }
      const leaseRunsOut = () => new Promise((resolve) => setTimeout(resolve, 500));

      test("an instance dies after its record committed, before its hold closed: the sweep charges the record's tokens and money", async () => {
        const s = await newSubject(1_000, { key: { limit: 10_000_000, period: "none" } });
        const [dying, other] = [await dyingInstance(), await instance()];
        const r = await dying.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(r.ok);
        await dying.writer.write(record(s, 100, 700_000), r.reservation); // committed, never settled
        await leaseRunsOut();
        await other.ledger.sweep();
        assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 100, reserved: 0 });
        assert.deepEqual(await agreed(other, "key", s.keyId), {
          spent: { total: 700_000, month: 700_000, monthKey: monthOf(now()) },
          reserved: 0,
        });
        // it was only slow, not dead: its own close comes late and changes nothing
        await dying.ledger.settle(r.reservation, 100, 700_000);
        assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 100, reserved: 0 });
        assert.equal((await agreed(other, "key", s.keyId)).spent.total, 700_000);
        const rest = await other.ledger.reserve(s, 1_000, 1, { signal: AbortSignal.abort() });
        assert.ok(rest.ok);
        assert.equal(rest.reservation.tokens, 900, "the limit less the charge, counted once");
        await finish(other, s, rest.reservation, 0);
      });

      test("an instance swept while slow commits its record, then dies before closing its hold: the next sweep charges it", async () => {
        const s = await newSubject(1_000);
        const [dying, other] = [await dyingInstance(), await instance()];
        const r = await dying.ledger.reserve(s, 300, 300);
        assert.ok(r.ok);
        await leaseRunsOut();
        await other.ledger.sweep();
        assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 0, reserved: 0 });
        await dying.writer.write(record(s, 120), r.reservation); // committed after the sweep, never settled
        await other.ledger.sweep();
        assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 120, reserved: 0 });
        await other.ledger.sweep();
        assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 120, reserved: 0 }, "once");
      });

      /** A key without limits whose session `id` is capped as given. */
      async function sessionSubject(
        session: Omit<SessionSubject, "id">,
        id = "run-1",
      ): Promise<LedgerSubject> {
        return { ...(await newSubject(1_000_000)), keyLimit: null, session: { id, ...session } };
      }

      /**
       * The session's figures in the shared state agree with the store's row (PostgreSQL's own
       * book) and with its records.
       */
      async function sessionAgreed(i: Instance, s: LedgerSubject): Promise<SessionCounter> {
        const shared = (await i.ledger.inspectSession(s.keyId, s.session!.id))!;
        const row = await store.db
          .selectFrom("session_usage")
          .selectAll()
          .where("key_id", "=", s.keyId)
          .where("session_id", "=", s.session!.id)
          .executeTakeFirstOrThrow();
        const records = await store.db
          .selectFrom("call_records")
          .select((eb) => [
            eb.fn.sum<number>("total_tokens").as("t"),
            eb.fn.sum<number>("cost_nanos").as("n"),
          ])
          .where("key_id", "=", s.keyId)
          .where("session_id", "=", s.session!.id)
          .executeTakeFirstOrThrow();
        assert.deepEqual(
          [shared.used, shared.spentNanos],
          [Number(row.used_tokens), Number(row.spent_nanos)],
          "the shared state's session is the store's",
        );
        assert.deepEqual(
          [Number(row.used_tokens), Number(row.spent_nanos)],
          [Number(records.t ?? 0), Number(records.n ?? 0)],
          "the records add up to the session's use",
        );
        return shared;
      }

      test("a capped session is held atomically across instances: 40 concurrent asks of 30 on a 300-token session hold 10", async () => {
        const [a, b] = instances;
        const s = await sessionSubject({ limitTokens: 300, budgetNanos: null });
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, n) =>
            (n % 2 ? a! : b!).ledger.reserve(s, 30, 30, { signal: AbortSignal.abort() }),
          ),
        );
        const held = results.filter((r) => r.ok);
        assert.equal(held.length, 10);
        assert.ok(
          results.every((r) => r.ok || r.reason === "session_limit"),
          "the session's cap refuses them",
        );
        assert.equal((await a!.ledger.inspectSession(s.keyId, "run-1"))!.reserved, 300);
        for (const [n, r] of results.entries()) if (r.ok) await finish(n % 2 ? a! : b!, s, r.reservation, 10);
        const book = await sessionAgreed(b!, s);
        assert.deepEqual([book.used, book.reserved], [100, 0]);
        // another session of the key: a book of its own
        const other = await a!.ledger.reserve({ ...s, session: { ...s.session!, id: "run-2" } }, 300, 300);
        assert.ok(other.ok);
        await a!.ledger.release(other.reservation);
        // the key without the caps holds nothing for a session
        const { session: _, ...plain } = s;
        const free = await a!.ledger.reserve(plain, 300, 300);
        assert.ok(free.ok);
        assert.equal(free.reservation.session, undefined);
        await a!.ledger.release(free.reservation);
        assert.equal((await a!.ledger.inspectSession(s.keyId, "run-1"))!.reserved, 0);
      });

      test("a session's money cap holds what its calls may cost, refused below the minimum naming it", async () => {
        const [a, b] = instances;
        const budget = nanosFor(RULE, WANTED) + nanosFor(RULE, MINIMUM) - 1;
        const s = await sessionSubject({ limitTokens: null, budgetNanos: budget }, "run-money");
        const first = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(first.ok);
        assert.deepEqual(first.reservation.holdsNanos, { account: false, key: false, session: true });
        const denied = await b!.ledger.reserve(s, WANTED, MINIMUM, { ...cost, signal: AbortSignal.abort() });
        assert.deepEqual(denied, { ok: false, reason: "session_budget", remaining: budget, held: true });
        await finish(a!, s, first.reservation, 80, 400_000);
        const book = await sessionAgreed(b!, s);
        assert.deepEqual([book.spentNanos, book.reservedNanos], [400_000, 0]);
        const next = await b!.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(next.ok);
        assert.equal(next.reservation.tokens, Math.min(WANTED, tokensFor(RULE, budget - 400_000)));
        await finish(b!, s, next.reservation, 0);
        const refused = await a!.ledger.reserve(s, WANTED, WANTED + 100_000, cost);
        assert.deepEqual(refused, {
          ok: false,
          reason: "session_budget",
          remaining: budget - 400_000,
          held: false,
        });
      });

      test("a session first met counts what its records already used (a cap set mid-session)", async () => {
        const [a] = instances;
        const s = await sessionSubject({ limitTokens: 500, budgetNanos: null }, "run-late");
        // two calls of the session before its key had caps
        const { session: _, ...uncapped } = s;
        for (const tokens of [120, 80]) {
          const r = await a!.ledger.reserve(uncapped, 200, 200);
          assert.ok(r.ok);
          await a!.writer.write(record(s, tokens), r.reservation);
          await a!.ledger.settle(r.reservation, tokens, 0);
        }
        const r = await a!.ledger.reserve(s, 1_000, 10);
        assert.ok(r.ok);
        assert.equal(r.reservation.tokens, 300, "the cap less what the session's records used");
        await finish(a!, s, r.reservation, 0);
        assert.equal((await sessionAgreed(a!, s)).used, 200);
      });

      test("a capped session's hold of an instance whose lease ran out is released by another's sweep, its money too", async () => {
        const s = await sessionSubject(
          { limitTokens: 1_000, budgetNanos: nanosFor(RULE, WANTED) },
          "run-swept",
        );
        const dying = await instance(randomUUID(), 400);
        const r = await dying.ledger
          .reserve(s, WANTED, MINIMUM, cost)
          .finally(() => dying.lease.stop().catch(() => undefined));
        assert.ok(r.ok);
        const other = instances[0]!;
        const held = (await other.ledger.inspectSession(s.keyId, "run-swept"))!;
        assert.deepEqual([held.reserved, held.reservedNanos], [WANTED, nanosFor(RULE, WANTED)]);
        await new Promise((resolve) => setTimeout(resolve, 500));
        // this sweep, or the others' periodic one that came first: what it released is not the point
        await other.ledger.sweep();
        const book = await sessionAgreed(other, s);
        assert.deepEqual([book.reserved, book.reservedNanos], [0, 0]);
        const granted = await other.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(granted.ok);
        await finish(other, s, granted.reservation, 1, 1);
      });

      test("an instance dies after a capped session's record committed, before its hold closed: the sweep charges the session once", async () => {
        const s = await sessionSubject({ limitTokens: 1_000, budgetNanos: 10_000_000 }, "run-dead");
        const dying = await instance(randomUUID(), 400);
        await dying.lease.stop();
        const other = instances[0]!;
        const r = await dying.ledger.reserve(s, WANTED, MINIMUM, cost);
        assert.ok(r.ok);
        await dying.writer.write(record(s, 100, 700_000), r.reservation); // committed, never settled
        await new Promise((resolve) => setTimeout(resolve, 500));
        await other.ledger.sweep();
        const book = await sessionAgreed(other, s);
        assert.deepEqual(
          [book.used, book.reserved, book.spentNanos, book.reservedNanos],
          [100, 0, 700_000, 0],
        );
        await dying.ledger.settle(r.reservation, 100, 700_000); // late: changes nothing
        assert.equal((await sessionAgreed(other, s)).used, 100);
        const rest = await other.ledger.reserve(s, 1_000, 1, { signal: AbortSignal.abort() });
        assert.ok(rest.ok);
        assert.equal(rest.reservation.tokens, 900, "the cap less the charge, counted once");
        await finish(other, s, rest.reservation, 0);
      });

      if (kind === "redis") {
        const flush = () => flushRedisKeys(TEST_REDIS_URL, prefix);

        /** An instance whose records are journaled in Redis, as the gateway's on PostgreSQL + Redis. */
        async function journaled(commitIntervalMs?: number) {
          const id = randomUUID();
          const i = await instance(id);
          const writer = new RecordWriter(store.db, {
            onError: () => {},
            holds: i.ledger as RedisLedger,
            now,
            journal: new RedisRecordJournal(i.redis!, id),
            ...(commitIntervalMs === undefined ? {} : { commitIntervalMs }),
          });
          return { id, i, writer };
        }

        test("a hold whose journal row lands later than its deadline says so, and its release leaves nothing held and no row", async () => {
          const s = await newSubject(1_000);
          const late = await instance(randomUUID(), 15_000, 0); // every row is late
          const r = await late.ledger.reserve(s, 100, 100);
          assert.ok(r.ok, "the hold is granted: its row is on its way");
          assert.equal(await r.reservation.landed?.(), false, "its call must be refused and charged nothing");
          await late.ledger.release(r.reservation);
          assert.deepEqual(await late.ledger.inspect("key", s.keyId), { used: 0, reserved: 0 });
          const rows = await store.db
            .selectFrom("ledger_reservations")
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .where("key_id", "=", s.keyId)
            .executeTakeFirstOrThrow();
          assert.equal(Number(rows.n), 0);
          await late.stop();
          instances.splice(instances.indexOf(late), 1);
        });

        test("after a flush, a seed waits until the new epoch is twice the journal's deadline old, then counts the hold in flight", async () => {
          const s = await newSubject(100);
          const a = instances[0]!;
          const first = await a.ledger.reserve(s, 80, 80);
          assert.ok(first.ok);
          const b = await instance(randomUUID(), 15_000, 400); // its seeds wait 800 ms in a new epoch
          await flush();
          const started = performance.now();
          const denied = await b.ledger.reserve(s, 50, 50, { signal: AbortSignal.abort() });
          const waited = performance.now() - started;
          assert.deepEqual(denied, { ok: false, reason: "key_limit", remaining: 100, held: true });
          assert.ok(waited >= 700, `the seed waited ${Math.round(waited)} ms of the epoch's 800`);
          await finish(a, s, first.reservation, 30);
          assert.deepEqual(await b.ledger.inspect("key", s.keyId), { used: 30, reserved: 0 });
          await b.stop();
          instances.splice(instances.indexOf(b), 1);
        });

        test("a close Redis cannot take (unreachable) does not fail the call: it lands once Redis answers", async () => {
          const s = await newSubject(1_000);
          const [i, other] = [await instance(), await instance()];
          const r = await i.ledger.reserve(s, 100, 100);
          assert.ok(r.ok);
          await i.writer.write(record(s, 40), r.reservation);
          const client = i.redis!.client;
          const ended = once(client, "end");
          client.disconnect();
          await ended;
          await i.ledger.settle(r.reservation, 40, 0); // resolves: the record is committed
          assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 0, reserved: 100 });
          await client.connect();
          await until(
            async () => (await other.ledger.inspect("key", s.keyId))?.used === 40,
            "the close lands",
            5_000,
          );
          assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 40, reserved: 0 });
        });

        test("the holds of one records commit close in one script, each with its charge", async () => {
          const s = await newSubject(10_000);
          const { id, i, writer } = await journaled(200);
          // the close script names the instance's swept holds; no other script here does
          const { seen: closes, stop } = await watchRedisCommands(
            (args) => args[0]?.toLowerCase() === "evalsha" && args.some((a) => a.endsWith(`x:${id}`)),
          );
          try {
            const held = [];
            for (let n = 0; n < 5; n++) {
              const r = await i.ledger.reserve(s, 100, 100);
              assert.ok(r.ok);
              held.push(r.reservation);
            }
            for (const [n, r] of held.entries()) {
              await writer.write(record(s, 10 + n), r);
              await i.ledger.settle(r, 10 + n, 0);
            }
            assert.deepEqual(
              await i.ledger.inspect("key", s.keyId),
              { used: 0, reserved: 500 },
              "held until committed",
            );
            await writer.flush();
            await until(
              async () => (await i.ledger.inspect("key", s.keyId))?.reserved === 0,
              "the holds close",
              5_000,
            );
            assert.deepEqual(await i.ledger.inspect("key", s.keyId), { used: 60, reserved: 0 });
            assert.equal(closes.length, 1, "one script closed the five");
          } finally {
            stop();
          }
        });

        test("a hold nobody waits behind, and its close, ask Redis only what they need", async () => {
          // Each command a script calls costs Redis more in Lua and its bridge than in the
          // command (decision 0044): with no waiter, the queues are one EXISTS, and a close
          // does not read back the holds its HINCRBY just answered.
          const s = await newSubject(10_000);
          const { i, writer } = await journaled();
          /** One call: held, recorded, committed, its hold closed. */
          const call = async (tokens: number) => {
            const r = await i.ledger.reserve(s, 100, 100);
            assert.ok(r.ok);
            await writer.write(record(s, tokens), r.reservation);
            await i.ledger.settle(r.reservation, tokens, 0);
            await writer.flush();
            await until(
              async () => (await i.ledger.inspect("key", s.keyId))?.reserved === 0,
              "the hold closes",
              5_000,
            );
          };
          await call(10); // seeds the key and the account first
          const { seen: called, stop } = await watchRedisCommands(
            (args, source) => source === "lua" && args.some((a) => a.includes(s.keyId)),
          );
          try {
            await call(20);
            assert.deepEqual(await i.ledger.inspect("key", s.keyId), { used: 30, reserved: 0 });
            // MONITOR's feed comes on its own connection: wait for the close's last command
            await until(
              async () => called.some((args) => args[0]!.toLowerCase() === "pexpire"),
              "the monitor saw the close to its end",
              5_000,
            );
          } finally {
            stop();
          }
          const names = called.map((args) => args[0]!.toLowerCase());
          assert.ok(names.includes("hincrby"), `the monitor saw the scripts' commands: ${names.join(" ")}`);
          assert.deepEqual(
            names.filter((n) => n === "zrange" || n === "zcard"),
            [],
            "no queue is read when no one waits",
          );
          // the key's queue named (the account's is not): one EXISTS of both queues each
          const queues = called.filter((args) => args[0]!.toLowerCase() === "exists" && args.length === 3);
          assert.equal(queues.length, 2, "both queues asked at once, in the hold and in its close");
          assert.deepEqual(
            called.filter((args) => args[0]!.toLowerCase() === "hget" && args[2] === "r"),
            [],
            "a close reads no holds its own HINCRBY answered",
          );
        });

        test("a subject's time to live: the first hold takes it away, a hold beside it asks nothing, the last close gives it back; no script reads the clock", async () => {
          // Decision 0045: PERSIST only when the subject held nothing (only then can it have a
          // time to live), and Redis's TIME only where a waiter or a seed needs it.
          const s = await newSubject(10_000);
          const { i, writer } = await journaled();
          const redis = i.redis!;
          const subjectKey = redis.key(await redis.epoch(), `s:k:${s.keyId}`);
          const ttl = () => redis.client.pttl(subjectKey);
          const first = await i.ledger.reserve(s, 100, 100); // seeds the key and the account
          assert.ok(first.ok);
          await writer.write(record(s, 10), first.reservation);
          await i.ledger.settle(first.reservation, 10, 0);
          await writer.flush();
          await until(async () => (await ttl()) > 0, "a subject holding nothing expires", 5_000);

          // Every line MONITOR logs, in order: a script's commands come as one run of "lua"
          // lines, bounded by other clients' commands (its EVALSHA among them).
          const lines: { args: string[]; source: string }[] = [];
          const { stop } = await watchRedisCommands((args, source) => {
            lines.push({ args, source });
            return false;
          });
          try {
            const held = [];
            for (const expected of [
              "the first hold takes the time to live away",
              "and the second finds none",
            ]) {
              const r = await i.ledger.reserve(s, 100, 100);
              assert.ok(r.ok);
              held.push(r.reservation);
              assert.equal(await ttl(), -1, expected);
            }
            for (const r of held) {
              await writer.write(record(s, 10), r);
              await i.ledger.settle(r, 10, 0);
            }
            await writer.flush();
            await until(async () => (await ttl()) > 0, "the last close gives the time to live back", 5_000);
            await until(
              async () =>
                lines.some(({ args }) => args[0]!.toLowerCase() === "pexpire" && args[1] === subjectKey),
              "the monitor saw the close's PEXPIRE",
              5_000,
            );
          } finally {
            stop();
          }
          const runs: string[][][] = [];
          let run: string[][] | undefined;
          for (const { args, source } of lines) {
            if (source !== "lua") run = undefined;
            else if (run) run.push(args);
            else {
              run = [args];
              runs.push(run);
            }
          }
          const ours = runs.filter((r) => r.some((args) => args.includes(subjectKey)));
          const commands = ours.flat().map((args) => args[0]!.toLowerCase());
          assert.ok(commands.includes("hincrby"), `the monitor saw the scripts: ${commands.join(" ")}`);
          assert.equal(
            ours.flat().filter((args) => args[0]!.toLowerCase() === "persist" && args[1] === subjectKey)
              .length,
            1,
            "only the hold that found the key holding nothing persisted it",
          );
          assert.ok(!commands.includes("time"), `no hold or close read Redis's clock: ${commands.join(" ")}`);
        });

        test("a recorded charge is kept in the store only until its hold closed in Redis: the rows do not pile up", async () => {
          const s = await newSubject(10_000);
          const i = await instance();
          const rows = async () =>
            Number(
              (
                await store.db
                  .selectFrom("ledger_reservations")
                  .select((eb) => eb.fn.countAll<number>().as("n"))
                  .where("key_id", "=", s.keyId)
                  .where("charged_tokens", "is not", null)
                  .executeTakeFirstOrThrow()
              ).n,
            );
          for (let n = 0; n < 5; n++) {
            const r = await i.ledger.reserve(s, 100, 100);
            assert.ok(r.ok);
            await i.writer.write(record(s, 10), r.reservation);
            assert.equal(await rows(), 1, "this call's charge; the last call's went with this commit");
            await i.ledger.settle(r.reservation, 10, 0);
          }
          assert.deepEqual(await i.ledger.inspect("key", s.keyId), { used: 50, reserved: 0 });
          await i.stop();
          assert.equal(await rows(), 0, "a stopping instance takes the last one");
        });

        test("flushed with money held: the new epoch seeds spending and held money from the store, charged once", async () => {
          const [a, b] = instances;
          const budget = 2_000_000;
          const s = await newSubject(100_000, { key: { limit: budget, period: "month" } });
          const spent = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
          assert.ok(spent.ok);
          await finish(a!, s, spent.reservation, 60, 300_000);
          const first = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
          assert.ok(first.ok);
          const held = first.reservation.nanos!;
          assert.equal(held, nanosFor(RULE, WANTED));
          await flush();
          // b seeds the key from the store: spent 300,000 and the journaled hold's money
          const denied = await b!.ledger.reserve(s, WANTED, MINIMUM, {
            ...cost,
            signal: AbortSignal.abort(),
          });
          assert.equal(denied.ok, false);
          assert.deepEqual(await b!.ledger.inspectMoney("key", s.keyId), {
            spent: { total: 300_000, month: 300_000, monthKey: monthOf(now()) },
            reserved: held,
          });
          await finish(a!, s, first.reservation, 60, 400_000);
          assert.deepEqual(await agreed(b!, "key", s.keyId), {
            spent: { total: 700_000, month: 700_000, monthKey: monthOf(now()) },
            reserved: 0,
          });
          const next = await b!.ledger.reserve(s, WANTED, MINIMUM, cost);
          assert.ok(next.ok);
          assert.equal(next.reservation.tokens, Math.min(WANTED, tokensFor(RULE, budget - 700_000)));
          await finish(b!, s, next.reservation, 0);
        });

        test("flushed after a record with a cost committed but before its hold closed in Redis: charged once", async () => {
          const [a, b] = instances;
          const s = await newSubject(100_000, { key: { limit: 2_000_000, period: "none" } });
          const first = await a!.ledger.reserve(s, WANTED, MINIMUM, cost);
          assert.ok(first.ok);
          await a!.writer.write(record(s, 30, 500_000), first.reservation); // committed: spent 500,000
          await flush();
          await a!.ledger.settle(first.reservation, 30, 500_000); // finds nothing to close in the new epoch
          const next = await b!.ledger.reserve(s, WANTED, MINIMUM, cost);
          assert.ok(next.ok);
          assert.equal(next.reservation.tokens, Math.min(WANTED, tokensFor(RULE, 1_500_000)));
          await finish(b!, s, next.reservation, 0);
          assert.equal(
            (await agreed(a!, "key", s.keyId)).spent.total,
            500_000,
            "the store's spending, counted once",
          );
        });

        test("flushed with a hold in flight: the new epoch counts the hold, the charge lands once", async () => {
          const [a, b] = instances;
          const s = await newSubject(100);
          const first = await a!.ledger.reserve(s, 80, 80);
          assert.ok(first.ok);
          await flush();
          // b seeds the key from the store: consumption 0 and the journaled hold of 80
          const denied = await b!.ledger.reserve(s, 50, 50, { signal: AbortSignal.abort() });
          assert.deepEqual(denied, { ok: false, reason: "key_limit", remaining: 100, held: true });
          await finish(a!, s, first.reservation, 30);
          assert.deepEqual(await b!.ledger.inspect("key", s.keyId), { used: 30, reserved: 0 });
          const next = await b!.ledger.reserve(s, 70, 50);
          assert.ok(next.ok);
          assert.equal(next.reservation.tokens, 70);
          await finish(b!, s, next.reservation, 70);
          assert.deepEqual(await a!.ledger.inspect("key", s.keyId), { used: 100, reserved: 0 });
        });

        test("flushed with a capped session's hold in flight: the new epoch seeds the session from the store and its journaled hold, charged once", async () => {
          const [a, b] = instances;
          const s = await sessionSubject({ limitTokens: 300, budgetNanos: 5_000_000 }, "run-flushed");
          const spent = await a!.ledger.reserve(s, 100, MINIMUM, cost);
          assert.ok(spent.ok);
          await finish(a!, s, spent.reservation, 20, 300_000);
          const first = await a!.ledger.reserve(s, 100, MINIMUM, cost);
          assert.ok(first.ok);
          await flush();
          // b seeds the session from session_usage (20 used) and the journaled hold of 100
          const denied = await b!.ledger.reserve(s, 200, 200, { ...cost, signal: AbortSignal.abort() });
          assert.deepEqual(denied, { ok: false, reason: "session_limit", remaining: 280, held: true });
          const seeded = (await b!.ledger.inspectSession(s.keyId, "run-flushed"))!;
          assert.deepEqual([seeded.used, seeded.reserved, seeded.spentNanos], [20, 100, 300_000]);
          assert.equal(seeded.reservedNanos, first.reservation.nanos);
          await finish(a!, s, first.reservation, 30, 200_000);
          const book = await sessionAgreed(b!, s);
          assert.deepEqual(
            [book.used, book.reserved, book.spentNanos, book.reservedNanos],
            [50, 0, 500_000, 0],
          );
          const next = await b!.ledger.reserve(s, 300, 10);
          assert.ok(next.ok);
          assert.equal(next.reservation.tokens, 250, "the cap less the session's use, counted once");
          await finish(b!, s, next.reservation, 0);
        });

        test("flushed after a record committed but before its hold closed in Redis: charged once", async () => {
          const [a, b] = instances;
          const s = await newSubject(100);
          const first = await a!.ledger.reserve(s, 80, 80);
          assert.ok(first.ok);
          await a!.writer.write(record(s, 30), first.reservation); // committed: used 30 in the store
          await flush();
          await a!.ledger.settle(first.reservation, 30, 0); // finds nothing to close in the new epoch
          const next = await b!.ledger.reserve(s, 100, 10);
          assert.ok(next.ok);
          assert.equal(next.reservation.tokens, 70, "the store's consumption, counted once");
          await finish(b!, s, next.reservation, 0);
          assert.deepEqual(await a!.ledger.inspect("key", s.keyId), { used: 30, reserved: 0 });
        });
      }
    },
  );
}

// One instance alone on Redis (the common deployment): its seeds in a new epoch do not wait for
// the epoch to age, as no other instance can hold what the store does not show yet; what it
// must wait for is its own holds whose journal rows are still on their way.
describe("the shared ledger on redis, one instance alone", await needsRedis(), () => {
  let database: TestDatabase;
  let store: Store;
  const prefix = redisPrefix();
  let alone: { ledger: RedisLedger; lease: InstanceLease; redis: RedisState };

  before(async () => {
    database = await createTestDatabase();
    store = openStore({ data_dir: ".", database_url: database.url });
    await migrate(store);
    const id = randomUUID();
    const redis = new RedisState(TEST_REDIS_URL, prefix, logger);
    const ledger = new RedisLedger(redis, store, {
      url: database.url,
      instanceId: id,
      waitMs: 5_000,
      leaseMs: 15_000,
      logger,
      now,
    });
    const lease = new InstanceLease(store, {
      id,
      redis: true,
      leaseMs: 15_000,
      logger,
      sweep: () => ledger.sweep(),
    });
    await lease.start();
    await ledger.start();
    assert.ok(await redis.connected(5_000), "the test's Redis answers");
    alone = { ledger, lease, redis };
  });
  after(async () => {
    await alone?.ledger.stop();
    await alone?.lease.stop();
    await alone?.redis.close();
    await store.close();
    await database.drop();
    await dropRedisKeys(TEST_REDIS_URL, prefix);
  });

  test("flushed while its own hold's journal row is on its way: the new epoch's seed waits for the row and counts the hold", async () => {
    const s = await keySubject(store, 100);
    // Seeded first, so that the hold below is only Redis's script and its row.
    const warm = await alone.ledger.reserve(s, 1, 1);
    assert.ok(warm.ok);
    await alone.ledger.release(warm.reservation);
    // Inserts wait behind this lock; the seed's reads do not.
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    try {
      await locker.query("begin");
      await locker.query("lock table ledger_reservations in exclusive mode");
      const first = alone.ledger.reserve(s, 80, 80);
      await until(
        async () => (await alone.ledger.inspect("key", s.keyId))?.reserved === 80,
        "Redis grants the hold",
        5_000,
      );
      const granted = await first;
      assert.ok(granted.ok, "the hold is granted while its row waits behind the lock");
      const landed = granted.reservation.landed!();
      await flushRedisKeys(TEST_REDIS_URL, prefix);
      const second = alone.ledger.reserve(s, 50, 50, { signal: AbortSignal.abort() });
      await new Promise((resolve) => setTimeout(resolve, 200)); // well within the row's deadline (1 s)
      await locker.query("commit");
      assert.equal(await landed, true, "the row landed in time: the hold stands");
      assert.deepEqual(
        await second,
        { ok: false, reason: "key_limit", remaining: 100, held: true },
        "the seed counted the hold: 80 of 100 held, 50 more would overspend the key",
      );
      assert.deepEqual(await alone.ledger.inspect("key", s.keyId), { used: 0, reserved: 80 });
      await alone.ledger.release(granted.reservation);
    } finally {
      await locker.end();
    }
  });
});
