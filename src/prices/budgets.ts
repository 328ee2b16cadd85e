// The money budget of an account or a key as the CLI and the console show it (what counts
// against it now, what is left, when it resets) and the one rule for changing it.
import { BUDGET_PERIODS, type BudgetPeriod, resetsAt, spentIn } from "./period.ts";

/** The stored columns of a budget (accounts and api_keys have the same ones). */
export interface BudgetColumns {
  budget_nanos: number | null;
  budget_period: string;
  spent_nanos: number;
  month_spent_nanos: number;
  spent_month: string;
}

export interface BudgetStatus {
  /** nanodollars; null: no budget */
  budget: number | null;
  period: BudgetPeriod;
  /**
   * Spent in the budget's period: this UTC month for a monthly budget, else in total (also
   * when there is no budget). Settled calls only: calls in flight hold money until they end.
   */
  spent: number;
  /** budget less spent, never below 0; null without a budget */
  left: number | null;
  /** when a monthly budget starts again (Unix ms); null without one */
  resetsAt: number | null;
}

export function periodOf(stored: string): BudgetPeriod {
  return (BUDGET_PERIODS as readonly string[]).includes(stored) ? (stored as BudgetPeriod) : "none";
}

export function budgetStatus(row: BudgetColumns, now = Date.now()): BudgetStatus {
  const budget = row.budget_nanos === null ? null : Number(row.budget_nanos);
  const period = budget === null ? "none" : periodOf(row.budget_period);
  const spent = spentIn(
    period,
    { total: Number(row.spent_nanos), month: Number(row.month_spent_nanos), monthKey: row.spent_month },
    now,
  );
  return {
    budget,
    period,
    spent,
    left: budget === null ? null : Math.max(0, budget - spent),
    resetsAt: budget === null ? null : (resetsAt(period, now)?.getTime() ?? null),
  };
}

/** A budget change that cannot apply; the message names what to give instead. */
export class BudgetChangeError extends Error {
  override name = "BudgetChangeError";
}

/**
 * The budget after a change: a new amount (null removes the budget, and with it its period),
 * a new period, or both; what is not given stays. A period needs an amount to apply to.
 */
export function changedBudget(
  current: Pick<BudgetColumns, "budget_nanos" | "budget_period">,
  change: { nanos?: number | null | undefined; period?: BudgetPeriod | undefined },
): { nanos: number | null; period: BudgetPeriod } {
  const nanos = change.nanos === undefined ? current.budget_nanos : change.nanos;
  if (nanos === null) {
    if (change.period === "month")
      throw new BudgetChangeError("a monthly period needs a budget amount as well");
    return { nanos: null, period: "none" };
  }
  return { nanos, period: change.period ?? periodOf(current.budget_period) };
}
