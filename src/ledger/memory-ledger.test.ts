import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryLedger } from "./memory-ledger.ts";
import type { LedgerSubject } from "./types.ts";

const subject = (over: Partial<LedgerSubject> = {}): LedgerSubject => ({
  accountId: "acc_1",
  accountQuota: 1000,
  accountUsed: 0,
  keyId: "key_1",
  keyLimit: null,
  keyUsed: 0,
  accountBudget: null,
  accountSpent: { total: 0, month: 0, monthKey: "" },
  keyBudget: null,
  keySpent: { total: 0, month: 0, monthKey: "" },
  ...over,
});

describe("MemoryLedger", () => {
  it("holds the wanted tokens against both the account and the key", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject({ keyLimit: 500 }), 100, 10);
    assert.ok(r.ok);
    assert.equal(r.reservation.tokens, 100);
    assert.deepEqual(ledger.account("acc_1"), { used: 0, reserved: 100 });
    assert.deepEqual(ledger.key("key_1"), { used: 0, reserved: 100 });
    assert.equal(ledger.openReservations(), 1);
  });

  it("grants less than wanted when only that much is left, and refuses below the minimum", async () => {
    const ledger = new MemoryLedger();
    const first = await ledger.reserve(subject({ keyLimit: 150 }), 100, 10);
    assert.ok(first.ok);
    const second = await ledger.reserve(subject({ keyLimit: 150 }), 100, 10);
    assert.ok(second.ok);
    assert.equal(second.reservation.tokens, 50, "only the key's remaining 50 can be held");
    const third = await ledger.reserve(subject({ keyLimit: 150 }), 100, 10);
    // nothing is consumed yet: the 150 left are all held by the two calls in flight
    assert.deepEqual(third, { ok: false, reason: "key_limit", remaining: 150, held: true });
  });

  it("names the account quota when it is the tighter limit", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject({ accountQuota: 50, keyLimit: 500 }), 100, 60);
    assert.deepEqual(r, { ok: false, reason: "quota", remaining: 50, held: false });
  });

  it("starts from the stored consumption the first time it meets an account or key", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject({ accountUsed: 990 }), 100, 5);
    assert.ok(r.ok);
    assert.equal(r.reservation.tokens, 10);
    // later calls carry a stale stored value; the ledger's own count wins
    await ledger.settle(r.reservation, 10, 0);
    assert.deepEqual(await ledger.reserve(subject({ accountUsed: 0 }), 100, 1), {
      ok: false,
      reason: "quota",
      remaining: 0,
      held: false,
    });
  });

  it("settle charges the actual tokens and frees the rest, exactly once", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject({ keyLimit: 1000 }), 100, 1);
    assert.ok(r.ok);
    await ledger.settle(r.reservation, 30, 0);
    await ledger.settle(r.reservation, 30, 0);
    await ledger.release(r.reservation);
    assert.deepEqual(ledger.account("acc_1"), { used: 30, reserved: 0 });
    assert.deepEqual(ledger.key("key_1"), { used: 30, reserved: 0 });
    assert.equal(ledger.openReservations(), 0);
  });

  it("release gives everything back", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject(), 400, 1);
    assert.ok(r.ok);
    await ledger.release(r.reservation);
    assert.deepEqual(ledger.account("acc_1"), { used: 0, reserved: 0 });
  });

  it("never lets concurrent reservations exceed the limit", async () => {
    const ledger = new MemoryLedger();
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        ledger.reserve(subject({ keyLimit: 1000, accountQuota: 5000 }), 90, 90),
      ),
    );
    const granted = results.filter((r) => r.ok);
    assert.equal(granted.length, 11, "11 holds of 90 fit in 1000");
    assert.ok(ledger.key("key_1")!.reserved <= 1000);
  });

  describe("waiting for tokens held by calls in flight", () => {
    it("a request that fits once a call settles waits for it instead of being refused", async () => {
      const ledger = new MemoryLedger({ waitMs: 5_000 });
      const first = await ledger.reserve(subject({ keyLimit: 100 }), 100, 50);
      assert.ok(first.ok);
      const waiting = ledger.reserve(subject({ keyLimit: 100 }), 100, 50);
      let settled = false;
      void waiting.then(() => {
        settled = true;
      });
      await Promise.resolve();
      assert.equal(settled, false, "it waits while the first call holds the whole limit");
      await ledger.settle(first.reservation, 30, 0);
      const second = await waiting;
      assert.ok(second.ok);
      assert.equal(second.reservation.tokens, 70, "what the first call did not use");
    });

    it("is refused at once when consumption alone leaves no room, saying what remains", async () => {
      const ledger = new MemoryLedger({ waitMs: 60_000 });
      const first = await ledger.reserve(subject({ keyLimit: 100 }), 100, 10);
      assert.ok(first.ok);
      await ledger.settle(first.reservation, 95, 0);
      assert.deepEqual(await ledger.reserve(subject({ keyLimit: 100 }), 100, 10), {
        ok: false,
        reason: "key_limit",
        remaining: 5,
        held: false,
      });
    });

    it("first come, first served: a later, smaller request does not pass one already waiting", async () => {
      const ledger = new MemoryLedger({ waitMs: 5_000 });
      const a = await ledger.reserve(subject({ keyLimit: 100 }), 60, 60);
      const b = await ledger.reserve(subject({ keyLimit: 100 }), 40, 40);
      assert.ok(a.ok && b.ok);
      const order: string[] = [];
      const big = ledger.reserve(subject({ keyLimit: 100 }), 40, 30).then((r) => {
        order.push("big");
        return r;
      });
      const small = ledger.reserve(subject({ keyLimit: 100 }), 10, 10).then((r) => {
        order.push("small");
        return r;
      });
      await ledger.settle(b.reservation, 30, 0); // 10 free: the small one would fit, but the big one came first
      await Promise.resolve();
      assert.deepEqual(order, []);
      await ledger.settle(a.reservation, 20, 0); // 50 free: the big one fits now, then the small one
      const [rb, rs] = await Promise.all([big, small]);
      assert.deepEqual(order, ["big", "small"]);
      assert.ok(rb.ok && rs.ok);
      assert.equal(rb.reservation.tokens, 40);
      assert.equal(rs.reservation.tokens, 10);
    });

    it("a waiter on another account and key is not held up by the queue", async () => {
      const ledger = new MemoryLedger({ waitMs: 5_000 });
      const a = await ledger.reserve(subject({ keyLimit: 10 }), 10, 10);
      assert.ok(a.ok);
      void ledger.reserve(subject({ keyLimit: 10 }), 10, 10);
      const other = await ledger.reserve(subject({ accountId: "acc_2", keyId: "key_2" }), 10, 10);
      assert.ok(other.ok);
      await ledger.release(a.reservation);
    });

    it("gives up after the wait, refusing with held: true and what consumption leaves", async () => {
      const ledger = new MemoryLedger({ waitMs: 20 });
      const a = await ledger.reserve(subject({ keyLimit: 100 }), 100, 100);
      assert.ok(a.ok);
      const r = await ledger.reserve(subject({ keyLimit: 100 }), 50, 50);
      assert.deepEqual(r, { ok: false, reason: "key_limit", remaining: 100, held: true });
      await ledger.release(a.reservation);
      const next = await ledger.reserve(subject({ keyLimit: 100 }), 50, 50);
      assert.ok(next.ok, "the one that gave up left the queue");
    });

    it("stops waiting when the caller's signal aborts", async () => {
      const ledger = new MemoryLedger({ waitMs: 60_000 });
      const a = await ledger.reserve(subject({ keyLimit: 100 }), 100, 100);
      assert.ok(a.ok);
      const controller = new AbortController();
      const r = ledger.reserve(subject({ keyLimit: 100 }), 50, 50, { signal: controller.signal });
      controller.abort();
      assert.deepEqual(await r, { ok: false, reason: "key_limit", remaining: 100, held: true });
      await ledger.release(a.reservation);
      assert.equal(ledger.openReservations(), 0);
    });

    it("a waiter whose room was consumed meanwhile is refused without waiting out its time", async () => {
      const ledger = new MemoryLedger({ waitMs: 60_000 });
      const a = await ledger.reserve(subject({ keyLimit: 100 }), 100, 50);
      assert.ok(a.ok);
      const r = ledger.reserve(subject({ keyLimit: 100 }), 50, 50);
      await ledger.settle(a.reservation, 80, 0);
      assert.deepEqual(await r, { ok: false, reason: "key_limit", remaining: 20, held: false });
    });
  });

  describe("a key's capped sessions", () => {
    const session = (limitTokens: number | null, budgetNanos: number | null = null, id = "run-1") => ({
      id,
      limitTokens,
      budgetNanos,
    });

    it("starts a session's book from what it used before, read once however many calls arrive together", async () => {
      let reads = 0;
      const ledger = new MemoryLedger({
        sessionUse: async () => {
          reads++;
          await new Promise((r) => setTimeout(r, 5));
          return { tokens: 250, nanos: 0 };
        },
      });
      const results = await Promise.all(
        Array.from({ length: 5 }, () => ledger.reserve(subject({ session: session(500) }), 100, 100)),
      );
      assert.equal(reads, 1);
      assert.equal(results.filter((r) => r.ok).length, 2, "the cap less what the session used holds two");
      assert.deepEqual(
        results.find((r) => !r.ok),
        {
          ok: false,
          reason: "session_limit",
          remaining: 250,
          held: true,
        },
      );
      assert.deepEqual(await ledger.inspectSession("key_1", "run-1"), {
        used: 250,
        reserved: 200,
        spentNanos: 0,
        reservedNanos: 0,
      });
    });

    it("each session of a key, and each key's session of one id, has its own book", async () => {
      const ledger = new MemoryLedger();
      assert.ok((await ledger.reserve(subject({ session: session(100) }), 100, 100)).ok);
      assert.ok((await ledger.reserve(subject({ session: session(100, null, "run-2") }), 100, 100)).ok);
      assert.ok((await ledger.reserve(subject({ keyId: "key_2", session: session(100) }), 100, 100)).ok);
      assert.equal((await ledger.reserve(subject({ session: session(100) }), 100, 100)).ok, false);
    });

    it("charges and releases the session with the key; its money cap holds what the call may cost", async () => {
      const ledger = new MemoryLedger();
      const rule = { fixed: 1_000, perToken: 10, promptTokens: 50 };
      const s = subject({ session: session(null, 3_000) });
      const r = await ledger.reserve(s, 250, 60, { cost: rule });
      assert.ok(r.ok);
      // 3,000 nanodollars pay for the prompt and 200 output tokens
      assert.equal(r.reservation.tokens, 250);
      assert.equal(r.reservation.nanos, 3_000);
      assert.deepEqual(r.reservation.holdsNanos, { account: false, key: false, session: true });
      assert.equal(r.reservation.session, "run-1");
      await ledger.settle(r.reservation, 120, 1_700);
      assert.deepEqual(await ledger.inspectSession("key_1", "run-1"), {
        used: 120,
        reserved: 0,
        spentNanos: 1_700,
        reservedNanos: 0,
      });
      assert.deepEqual(await ledger.reserve(s, 250, 200, { cost: rule }), {
        ok: false,
        reason: "session_budget",
        remaining: 1_300,
        held: false,
      });
      assert.deepEqual(ledger.key("key_1"), { used: 120, reserved: 0 });
    });

    it("on a tie the key's own limit is named before the session's", async () => {
      const ledger = new MemoryLedger();
      assert.deepEqual(await ledger.reserve(subject({ keyLimit: 50, session: session(50) }), 100, 60), {
        ok: false,
        reason: "key_limit",
        remaining: 50,
        held: false,
      });
    });
  });
});
