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
    assert.deepEqual(third, { ok: false, reason: "key_limit", remaining: 0 });
  });

  it("names the account quota when it is the tighter limit", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject({ accountQuota: 50, keyLimit: 500 }), 100, 60);
    assert.deepEqual(r, { ok: false, reason: "quota", remaining: 50 });
  });

  it("starts from the stored consumption the first time it meets an account or key", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject({ accountUsed: 990 }), 100, 5);
    assert.ok(r.ok);
    assert.equal(r.reservation.tokens, 10);
    // later calls carry a stale stored value; the ledger's own count wins
    await ledger.settle(r.reservation, 10);
    assert.deepEqual(await ledger.reserve(subject({ accountUsed: 0 }), 100, 1), {
      ok: false,
      reason: "quota",
      remaining: 0,
    });
  });

  it("settle charges the actual tokens and frees the rest, exactly once", async () => {
    const ledger = new MemoryLedger();
    const r = await ledger.reserve(subject({ keyLimit: 1000 }), 100, 1);
    assert.ok(r.ok);
    await ledger.settle(r.reservation, 30);
    await ledger.settle(r.reservation, 30);
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
});
