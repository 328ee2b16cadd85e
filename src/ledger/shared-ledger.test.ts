// The shared ledgers, as two instances in one process on one PostgreSQL store (and Redis):
// holds are atomic across instances, a waiter on one is let in when a hold on the other
// closes, a dead instance's holds are swept, and (Redis) a flush while holds are in flight is
// rebuilt from the store without counting a charge twice or losing a hold.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { callRecord } from "../../test/support/call-record.ts";
import { createTestDatabase, type TestDatabase } from "../../test/support/postgres.ts";
import {
  dropRedisKeys,
  flushRedisKeys,
  needsRedis,
  redisPrefix,
  TEST_REDIS_URL,
} from "../../test/support/redis-instance.ts";
import { createAccount, createKey } from "../accounts/repository.ts";
import { createLogger } from "../observability/logger.ts";
import { RecordWriter } from "../records/writer.ts";
import { migrate, openStore, type Store } from "../store/db.ts";
import { InstanceLease } from "./instances.ts";
import { NO_MONEY } from "./money.ts";
import { PostgresLedger } from "./postgres-ledger.ts";
import { RedisLedger } from "./redis-ledger.ts";
import { RedisState } from "./redis-state.ts";
import type { Ledger, LedgerSubject, Reservation } from "./types.ts";

const logger = createLogger("silent");

interface Instance {
  ledger: Ledger & {
    inspect(kind: "account" | "key", id: string): Promise<{ used: number; reserved: number } | undefined>;
    openHolds(): Promise<number>;
    sweep(): Promise<number>;
  };
  lease: InstanceLease;
  writer: RecordWriter;
  stop(): Promise<void>;
}

function record(subject: LedgerSubject, tokens: number) {
  return callRecord({ account_id: subject.accountId, key_id: subject.keyId, prompt_tokens: tokens });
}

/** The finisher's order: the record (ending the hold in the store), then the settle. */
async function finish(i: Instance, subject: LedgerSubject, r: Reservation, tokens: number): Promise<void> {
  await i.writer.write(record(subject, tokens), r);
  await i.ledger.settle(r, tokens, 0);
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

      async function instance(id = randomUUID(), leaseMs = 15_000): Promise<Instance> {
        const options = { url: database.url, instanceId: id, waitMs: 5_000, leaseMs, logger };
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
        const writer = new RecordWriter(store.db, { onError: () => {}, holds: ledger });
        const made: Instance = {
          ledger,
          lease,
          writer,
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

      async function newSubject(limit: number): Promise<LedgerSubject> {
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
        return {
          accountId: account.id,
          accountQuota: 1_000_000,
          accountUsed: 0,
          keyId: key.id,
          keyLimit: limit,
          keyUsed: 0,
          ...NO_MONEY,
        };
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

      test("the holds of an instance whose lease ran out are released by another's sweep", async () => {
        const s = await newSubject(1_000);
        const dying = await instance(randomUUID(), 400);
        const r = await dying.ledger.reserve(s, 700, 700);
        assert.ok(r.ok);
        await dying.lease.stop().catch(() => undefined); // no more renewals: as if it crashed
        const other = instances[0]!;
        const denied = await other.ledger.reserve(s, 500, 500, { signal: AbortSignal.abort() });
        assert.equal(denied.ok, false);
        await new Promise((resolve) => setTimeout(resolve, 500));
        assert.ok((await other.ledger.sweep()) >= 700);
        assert.deepEqual(await other.ledger.inspect("key", s.keyId), { used: 0, reserved: 0 });
        const granted = await other.ledger.reserve(s, 500, 500);
        assert.ok(granted.ok);
        await finish(other, s, granted.reservation, 1);
      });

      if (kind === "redis") {
        const flush = () => flushRedisKeys(TEST_REDIS_URL, prefix);

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
