import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { callRecord } from "../../test/support/call-record.ts";
import type { CallRecord } from "./call-record.ts";
import { dailyDeltas } from "./daily-usage.ts";
import { DAY_MS } from "./days.ts";

/** 17 May 2026, 00:00 UTC */
const DAY = Date.UTC(2026, 4, 17);

const call = (fields: Partial<CallRecord>) =>
  callRecord({ account_id: "acc_a", key_id: "key_1", created_at: DAY + 1_000, ...fields });

describe("dailyDeltas", () => {
  test("sums tokens, calls and cost per account, UTC day, key and model", () => {
    const deltas = dailyDeltas([
      call({ prompt_tokens: 1, completion_tokens: 2, cost_nanos: 10 }),
      call({ prompt_tokens: 3, completion_tokens: 4, cost_nanos: 20, created_at: DAY + DAY_MS - 1 }),
      call({ prompt_tokens: 5, completion_tokens: 0, created_at: DAY + DAY_MS }),
      call({ prompt_tokens: 7, key_id: "key_2" }),
      call({ prompt_tokens: 9, account_id: "acc_b" }),
    ]);
    const row = (
      account_id: string,
      day: string,
      key_id: string,
      p: number,
      c: number,
      calls: number,
      cost = 0,
    ) => ({
      account_id,
      day,
      key_id,
      model: "demo",
      prompt_tokens: p,
      completion_tokens: c,
      total_tokens: p + c,
      calls,
      cost_nanos: cost,
    });
    assert.deepEqual(deltas, [
      row("acc_a", "2026-05-17", "key_1", 4, 6, 2, 30),
      row("acc_a", "2026-05-17", "key_2", 7, 0, 1),
      row("acc_a", "2026-05-18", "key_1", 5, 0, 1),
      row("acc_b", "2026-05-17", "key_1", 9, 0, 1),
    ]);
  });

  test('no account: not aggregated (no console shows it); no key: under the key ""', () => {
    const deltas = dailyDeltas([
      call({ account_id: null, prompt_tokens: 3 }),
      call({ key_id: null, prompt_tokens: 2 }),
    ]);
    assert.deepEqual(
      deltas.map((d) => [d.account_id, d.key_id, d.prompt_tokens]),
      [["acc_a", "", 2]],
    );
  });

  test('only a model the gateway resolved gets rows of its own: any other name sums under ""', () => {
    const deltas = dailyDeltas([
      // a name the client made up: no upstream was chosen
      call({ public_model: "made-up-by-a-client", upstream_model: null }),
      call({ public_model: null, upstream_model: null }),
      call({ public_model: null, upstream_model: "demo-echo" }),
      call({ public_model: "demo", upstream_model: "demo-echo" }),
    ]);
    assert.deepEqual(
      deltas.map((d) => [d.model, d.calls]),
      [
        ["", 3],
        ["demo", 1],
      ],
    );
  });

  test("rows come sorted by account, day, key and model, whatever the records' order, so concurrent commits lock them in one order", () => {
    const records = [
      call({ account_id: "acc_b", created_at: DAY }),
      call({ account_id: "acc_a", created_at: DAY + DAY_MS, key_id: "key_1" }),
      call({ account_id: "acc_a", created_at: DAY, key_id: "key_2", public_model: "z" }),
      call({ account_id: "acc_a", created_at: DAY, key_id: "key_2", public_model: "a" }),
      call({ account_id: "acc_a", created_at: DAY, key_id: null }),
    ];
    const order = (rs: CallRecord[]) => dailyDeltas(rs).map((d) => [d.account_id, d.day, d.key_id, d.model]);
    const expected = [
      ["acc_a", "2026-05-17", "", "demo"],
      ["acc_a", "2026-05-17", "key_2", "a"],
      ["acc_a", "2026-05-17", "key_2", "z"],
      ["acc_a", "2026-05-18", "key_1", "demo"],
      ["acc_b", "2026-05-17", "key_1", "demo"],
    ];
    assert.deepEqual(order(records), expected);
    assert.deepEqual(order(records.toReversed()), expected);
  });
});
