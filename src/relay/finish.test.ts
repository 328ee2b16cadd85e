import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { FakeLedger, FakeRates, reservation } from "../../test/support/fake-holds.ts";
import { configSchema } from "../config/cross-check.ts";
import { ANSWERED, type CallOutcome, CLIENT_GONE } from "../domain/outcomes.ts";
import { GatewayError } from "../errors/index.ts";
import type { Reservation } from "../ledger/types.ts";
import { Registry } from "../models/registry.ts";
import { createLogger } from "../observability/logger.ts";
import { Metrics } from "../observability/metrics.ts";
import { configuredPricing } from "../prices/pricing.ts";
import type { RateTicket } from "../rate-limits/rate-limiter.ts";
import type { CallRecord } from "../records/call-record.ts";
import { CallDraft } from "../records/draft.ts";
import type { Budget } from "./budget.ts";
import { CallFinisher, type RecordSink } from "./finish.ts";
import { Hold } from "./hold.ts";

/** $1 per million prompt tokens, $2 per million completion tokens: 1,000 and 2,000 nanodollars a token. */
const PRICING = configuredPricing({ input: 1, output: 2 });
const costOf = (prompt: number, completion: number) => prompt * 1_000 + completion * 2_000;

const BUDGET: Budget = {
  promptBound: 100,
  perRequestOverhead: 7,
  outputBound: 20,
  choices: 1,
  wanted: 120,
  minimum: 116,
  cost: undefined,
};
const TICKET: RateTicket = { subjects: [], tokens: 120 };

/** Records what it is asked to commit, and what the ledger had been told by then. */
class FakeRecords implements RecordSink {
  readonly written: { record: CallRecord; reservation: Reservation | undefined; closedBefore: number }[] = [];
  /** set: write() rejects with it, as a store that cannot commit does */
  failure: Error | undefined;
  /** set: write() commits only once it resolves */
  gate: Promise<void> | undefined;
  readonly #ledger: FakeLedger;

  constructor(ledger: FakeLedger) {
    this.#ledger = ledger;
  }

  async write(record: CallRecord, reservation?: Reservation): Promise<void> {
    if (this.gate) await this.gate;
    this.written.push({ record, reservation, closedBefore: this.#ledger.closes().length });
    if (this.failure) throw this.failure;
  }
}

function setup(held = reservation(120)) {
  const ledger = new FakeLedger();
  const rates = new FakeRates();
  const records = new FakeRecords(ledger);
  const metrics = new Metrics();
  const registry = new Registry(
    configSchema.parse({
      providers: [{ id: "demo", type: "demo" }],
      models: [{ id: "demo", provider: "demo" }],
      plans: [{ id: "default", quota_tokens: 1, models: ["demo"] }],
    }),
    new Map(),
    {},
  );
  const logs: { level: number; msg: string; [field: string]: unknown }[] = [];
  const logger = createLogger(
    "warn",
    new Writable({
      write(chunk, _enc, cb) {
        logs.push(JSON.parse(String(chunk)));
        cb();
      },
    }),
  );
  const finisher = new CallFinisher({ records, metrics, logger, registry });
  const hold = new Hold({ ledger, rates, now: Date.now }, held, TICKET, BUDGET);
  const draft = new CallDraft("req_1");
  draft.accountId = "acc_1";
  draft.keyId = "key_1";
  draft.publicModel = "demo";
  draft.pricing = PRICING;
  return { ledger, rates, records, metrics, registry, logs, finisher, hold, draft };
}

/** The single record committed, asserting there is exactly one. */
function theRecord(records: FakeRecords): CallRecord {
  assert.equal(records.written.length, 1, "one record committed");
  return records.written[0]!.record;
}

async function counted(metric: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  return (await metric.get()).values.reduce((sum, v) => sum + v.value, 0);
}

describe("finish", () => {
  test("an answered call: its record committed with usage and outcome, then its hold charged the same", async () => {
    const { ledger, rates, records, metrics, finisher, hold, draft } = setup();
    draft.setUsage(10, 20, "upstream");
    await finisher.finish(draft, ANSWERED, hold);
    const record = theRecord(records);
    assert.equal(records.written[0]!.reservation, hold.reservation, "the hold travels with its record");
    assert.equal(records.written[0]!.closedBefore, 0, "the record is committed before the hold closes");
    assert.equal(record.status, "ok");
    assert.equal(record.http_status, 200);
    assert.equal(record.error_code, null);
    assert.deepEqual([record.prompt_tokens, record.completion_tokens, record.total_tokens], [10, 20, 30]);
    assert.equal(record.reserved_tokens, 120);
    assert.equal(record.overrun_tokens, 0);
    assert.equal(record.cost_nanos, costOf(10, 20));
    assert.deepEqual(ledger.closes(), [
      { op: "settle", reservation: hold.reservation, tokens: 30, nanos: costOf(10, 20) },
    ]);
    assert.deepEqual(rates.settles(), [{ op: "settle", ticket: TICKET, tokens: 30 }]);
    assert.equal(await counted(metrics.calls), 1);
    assert.equal(await counted(metrics.tokens), 30);
  });

  test("the hold stays open until the record is committed", async () => {
    const { ledger, records, finisher, hold, draft } = setup();
    let commit!: () => void;
    records.gate = new Promise((resolve) => {
      commit = resolve;
    });
    draft.setUsage(10, 20, "upstream");
    const finished = finisher.finish(draft, ANSWERED, hold);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(ledger.closes(), []);
    commit();
    await finished;
    assert.equal(ledger.closes().length, 1);
  });

  test("an estimate is charged no more than was held", async () => {
    const { ledger, records, metrics, finisher, hold, draft } = setup();
    draft.setUsage(80, 50, "estimated");
    await finisher.finish(draft, CLIENT_GONE, hold);
    const record = theRecord(records);
    assert.deepEqual([record.prompt_tokens, record.completion_tokens, record.total_tokens], [80, 40, 120]);
    assert.equal(record.overrun_tokens, 0);
    assert.equal(record.status, "client_disconnect");
    assert.deepEqual(ledger.closes(), [
      { op: "settle", reservation: hold.reservation, tokens: 120, nanos: costOf(80, 40) },
    ]);
    assert.equal(await counted(metrics.overrunTokens), 0);
  });

  test("reported usage beyond the hold is charged whole; the overrun is recorded, counted, and grows the overhead once", async () => {
    const { ledger, records, metrics, registry, logs, finisher, draft } = setup();
    const overheads = registry.model("demo")!.overheads;
    assert.equal(overheads.per_request, 32);
    const ledgerDeps = { ledger, rates: new FakeRates(), now: Date.now };
    // two calls sized with the same overhead, whose prompts both came out 50 over the bound
    for (const id of ["req_a", "req_b"]) {
      const d = new CallDraft(id);
      d.publicModel = "demo";
      d.setUsage(150, 10, "upstream");
      await finisher.finish(d, ANSWERED, new Hold(ledgerDeps, reservation(120), TICKET, BUDGET));
    }
    assert.deepEqual(
      records.written.map((w) => [w.record.total_tokens, w.record.reserved_tokens, w.record.overrun_tokens]),
      [
        [160, 120, 40],
        [160, 120, 40],
      ],
    );
    assert.deepEqual(
      ledger.closes().map((c) => c.op === "settle" && c.tokens),
      [160, 160],
    );
    assert.equal(await counted(metrics.overrunTokens), 80);
    assert.equal(overheads.per_request, 7 + 50, "from the overhead the reservation used: not 7 + 50 + 50");
    assert.equal(logs.length, 2);
    assert.equal(logs[0]!.overrun, 40);
    assert.match(logs[0]!.msg, /prompt_overhead\.per_request is now 57/);

    // a prompt within its bound: the completion overran, and the overhead stays
    draft.setUsage(90, 40, "upstream");
    await finisher.finish(draft, ANSWERED, new Hold(ledgerDeps, reservation(120), TICKET, BUDGET));
    assert.equal(overheads.per_request, 57);
    assert.match(logs[2]!.msg, /the completion passed the output bound/);
  });

  test("the cost is charged up to what a budget held; the rest is recorded as uncharged", async () => {
    const { ledger, records, finisher, hold, draft } = setup(reservation(120, 30_000));
    draft.setUsage(10, 20, "upstream");
    await finisher.finish(draft, ANSWERED, hold);
    const record = theRecord(records);
    assert.equal(record.cost_nanos, 30_000);
    assert.equal(record.uncharged_cost_nanos, costOf(10, 20) - 30_000);
    assert.deepEqual(ledger.closes(), [
      { op: "settle", reservation: hold.reservation, tokens: 30, nanos: 30_000 },
    ]);
  });

  test("without a hold (a call refused before admission) the record is committed and the ledger untouched", async () => {
    const { ledger, records, finisher, draft } = setup();
    draft.setUsage(10, 20, "upstream");
    await finisher.finish(draft, { status: "error", httpStatus: 429, errorCode: "rate_limit_exceeded" });
    const record = theRecord(records);
    assert.equal(records.written[0]!.reservation, undefined);
    assert.equal(record.reserved_tokens, 0);
    assert.equal(record.cost_nanos, costOf(10, 20), "no budget held: the cost as it is");
    assert.deepEqual(ledger.calls, []);
  });

  test("a record the store cannot commit: the hold released, nothing charged, store_unavailable thrown", async () => {
    const { ledger, rates, records, finisher, hold, draft } = setup();
    const cause = new Error("disk full");
    records.failure = cause;
    draft.setUsage(10, 20, "upstream");
    await assert.rejects(finisher.finish(draft, ANSWERED, hold), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.errorName, "store_unavailable");
      assert.equal(err.cause, cause);
      return true;
    });
    assert.deepEqual(ledger.closes(), [{ op: "release", reservation: hold.reservation }]);
    assert.deepEqual(rates.settles(), [{ op: "settle", ticket: TICKET, tokens: 0 }]);
    // what the relay does after: its finally closes the hold, the error handler fails the call
    await hold.close(draft.totalTokens);
    await finisher.fail(draft, new GatewayError("store_unavailable"), hold);
    assert.equal(records.written.length, 1);
    assert.equal(ledger.closes().length, 1);
  });
});

describe("fail", () => {
  test("a failure of the gateway's own charges nothing: the hold released, the usage kept as uncharged", async () => {
    const { ledger, records, finisher, hold, draft } = setup();
    draft.setUsage(10, 5, "upstream");
    await finisher.fail(draft, new GatewayError("safety_unavailable"), hold);
    const record = theRecord(records);
    assert.deepEqual(
      [record.status, record.http_status, record.error_code],
      ["error", 503, "safety_unavailable"],
    );
    assert.deepEqual([record.prompt_tokens, record.completion_tokens, record.total_tokens], [0, 0, 0]);
    assert.equal(record.uncharged_tokens, 15);
    assert.equal(record.cost_nanos, 0);
    assert.deepEqual(ledger.closes(), [{ op: "release", reservation: hold.reservation }]);
  });

  test("a failure of the gateway's own keeps the usage's cost as uncharged", async () => {
    const { records, finisher, hold, draft } = setup();
    draft.setUsage(10, 5, "upstream");
    await finisher.fail(draft, new GatewayError("safety_unavailable"), hold);
    assert.equal(theRecord(records).uncharged_cost_nanos, costOf(10, 5));
  });

  test("an upstream failure is charged what the upstream counted, recorded with the status the client got", async () => {
    const { ledger, records, finisher, hold, draft } = setup();
    draft.setUsage(10, 5, "upstream");
    await finisher.fail(draft, new GatewayError("upstream_rate_limited"), hold, 529);
    const record = theRecord(records);
    assert.deepEqual(
      [record.status, record.http_status, record.error_code],
      ["error", 529, "upstream_rate_limited"],
    );
    assert.deepEqual(ledger.closes(), [
      { op: "settle", reservation: hold.reservation, tokens: 15, nanos: costOf(10, 5) },
    ]);
  });

  test("a refused prompt is recorded as content_filter, not as an error", async () => {
    const { records, finisher, hold, draft } = setup();
    await finisher.fail(draft, new GatewayError("content_filter"), hold);
    const record = theRecord(records);
    assert.deepEqual(
      [record.status, record.http_status, record.error_code],
      ["content_filter", 400, "content_filter"],
    );
  });

  test("a record the store cannot commit is logged, not thrown: the client is told the first error", async () => {
    const { ledger, records, logs, finisher, hold, draft } = setup();
    records.failure = new Error("disk full");
    draft.setUsage(10, 5, "upstream");
    await finisher.fail(draft, new GatewayError("upstream_error"), hold);
    assert.deepEqual(ledger.closes(), [{ op: "release", reservation: hold.reservation }]);
    assert.deepEqual(
      logs.map((l) => [l.msg, l.request_id]),
      [["could not record a failed call", "req_1"]],
    );
  });
});

describe("one record and one close, whatever ends the call first", () => {
  const ends: { name: string; status: CallOutcome["status"] | undefined; run: Run }[] = [
    { name: "answered", status: "ok", run: (f, d, h) => f.finish(d, ANSWERED, h) },
    { name: "client gone", status: "client_disconnect", run: (f, d, h) => f.finish(d, CLIENT_GONE, h) },
    {
      name: "upstream error",
      status: "error",
      run: (f, d, h) => f.fail(d, new GatewayError("upstream_error"), h),
    },
    {
      name: "gateway fault",
      status: "error",
      run: (f, d, h) => f.fail(d, new GatewayError("internal_error"), h),
    },
    // the relay's finally
    { name: "close", status: undefined, run: (_f, d, h) => h.close(d.totalTokens) },
  ];

  for (const together of [false, true])
    test(together ? "all at once, in every order" : "one after the other, in every order", async () => {
      for (const order of permutations(ends)) {
        const { ledger, rates, records, metrics, finisher, hold, draft } = setup();
        draft.setUsage(10, 20, "upstream");
        const runs = order.map((e) => () => e.run(finisher, draft, hold));
        if (together) await Promise.all(runs.map((run) => run()));
        else for (const run of runs) await run();
        const names = order.map((e) => e.name).join(" > ");
        assert.equal(records.written.length, 1, `one record: ${names}`);
        assert.equal(records.written[0]!.record.status, order.find((e) => e.status)!.status, names);
        assert.equal(ledger.closes().length, 1, `one ledger close: ${names}`);
        assert.equal(rates.settles().length, 1, `one rate settle: ${names}`);
        assert.equal(ledger.openReservations(), 0, names);
        assert.equal(await counted(metrics.calls), 1, `counted once: ${names}`);
      }
    });
});

type Run = (finisher: CallFinisher, draft: CallDraft, hold: Hold) => Promise<void>;

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}
