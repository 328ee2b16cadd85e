import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { BudgetChangeError, budgetStatus, changedBudget } from "./budgets.ts";

const NOV_15 = Date.UTC(2026, 10, 15, 12);
const DEC_1 = Date.UTC(2026, 11, 1);

const row = (fields: Partial<Parameters<typeof budgetStatus>[0]>) => ({
  budget_nanos: null,
  budget_period: "none",
  spent_nanos: 7_000_000_000,
  month_spent_nanos: 2_000_000_000,
  spent_month: "2026-11",
  ...fields,
});

describe("budgetStatus", () => {
  test("a monthly budget counts this UTC month and resets on the 1st", () => {
    const s = budgetStatus(row({ budget_nanos: 5_000_000_000, budget_period: "month" }), NOV_15);
    assert.deepEqual(s, {
      budget: 5_000_000_000,
      period: "month",
      spent: 2_000_000_000,
      left: 3_000_000_000,
      resetsAt: DEC_1,
    });
    // in December nothing of November's spending counts
    const december = budgetStatus(row({ budget_nanos: 5_000_000_000, budget_period: "month" }), DEC_1 + 1);
    assert.equal(december.spent, 0);
    assert.equal(december.left, 5_000_000_000);
    assert.equal(december.resetsAt, Date.UTC(2027, 0, 1));
  });

  test("a budget without a period counts everything, never resets, and is never below 0 left", () => {
    const s = budgetStatus(row({ budget_nanos: 5_000_000_000 }), NOV_15);
    assert.deepEqual(s, {
      budget: 5_000_000_000,
      period: "none",
      spent: 7_000_000_000,
      left: 0,
      resetsAt: null,
    });
  });

  test("no budget: spent in total, nothing left to count, no reset", () => {
    const s = budgetStatus(row({ budget_period: "month" }), NOV_15);
    assert.deepEqual(s, { budget: null, period: "none", spent: 7_000_000_000, left: null, resetsAt: null });
  });
});

describe("changedBudget", () => {
  const monthly = { budget_nanos: 5, budget_period: "month" };
  test("what is not given stays; removing the budget removes its period", () => {
    assert.deepEqual(changedBudget(monthly, { nanos: 9 }), { nanos: 9, period: "month" });
    assert.deepEqual(changedBudget(monthly, { period: "none" }), { nanos: 5, period: "none" });
    assert.deepEqual(changedBudget(monthly, { nanos: null }), { nanos: null, period: "none" });
    assert.deepEqual(
      changedBudget({ budget_nanos: null, budget_period: "none" }, { nanos: 3, period: "month" }),
      {
        nanos: 3,
        period: "month",
      },
    );
  });

  test("a monthly period without an amount is refused", () => {
    assert.throws(
      () => changedBudget({ budget_nanos: null, budget_period: "none" }, { period: "month" }),
      BudgetChangeError,
    );
    assert.throws(() => changedBudget(monthly, { nanos: null, period: "month" }), BudgetChangeError);
  });
});
