// Money budgets in the CLI: the fields `accounts` and `keys` print (dollars as decimal
// numbers, converted once from the stored nanodollars), their human text, and the amounts and
// periods the commands take.
import { BudgetChangeError, type BudgetColumns, budgetStatus, changedBudget } from "../prices/budgets.ts";
import { BUDGET_PERIODS, type BudgetPeriod } from "../prices/period.ts";
import { formatUsd, parseUsd, UsdInputError, usd } from "../prices/usd.ts";
import { UsageError } from "./context.ts";

export function budgetView(row: BudgetColumns, now = Date.now()) {
  const s = budgetStatus(row, now);
  return {
    /** null: no budget */
    budget_usd: s.budget === null ? null : usd(s.budget),
    budget_period: s.period,
    /** in the budget's period: this UTC month for a monthly budget, else in total */
    spent_usd: usd(s.spent),
    left_usd: s.left === null ? null : usd(s.left),
    budget_resets_at: s.resetsAt === null ? null : new Date(s.resetsAt).toISOString(),
  };
}

/** "budget=$25/month  spent=$1.5  left=$23.5  resets=2026-12-01", or "spent=$1.5  budget=none" */
export function describeBudget(row: BudgetColumns, now = Date.now()): string {
  const s = budgetStatus(row, now);
  const spent = `spent=$${formatUsd(s.spent)}`;
  if (s.budget === null || s.left === null) return `${spent}  budget=none`;
  const per = s.period === "month" ? "/month" : "";
  const resets = s.resetsAt === null ? "" : `  resets=${new Date(s.resetsAt).toISOString().slice(0, 10)}`;
  return `budget=$${formatUsd(s.budget)}${per}  ${spent}  left=$${formatUsd(s.left)}${resets}`;
}

/** A budget amount in dollars, or "none" (null) to remove it. */
export function parseBudget(value: string, what: string): number | null {
  if (value === "none") return null;
  try {
    return parseUsd(value);
  } catch (err) {
    if (err instanceof UsdInputError)
      throw new UsageError(`${what} ${err.message} ("none" removes the budget)`);
    throw err;
  }
}

export function parsePeriod(value: string | undefined, flag: string): BudgetPeriod | undefined {
  if (value === undefined) return undefined;
  if (!(BUDGET_PERIODS as readonly string[]).includes(value))
    throw new UsageError(`${flag} must be one of ${BUDGET_PERIODS.join(", ")}`);
  return value as BudgetPeriod;
}

/** The budget after the change, or a usage error naming `periodFlag`. */
export function nextBudget(
  current: BudgetColumns,
  change: { nanos?: number | null | undefined; period?: BudgetPeriod | undefined },
  periodFlag: string,
): { nanos: number | null; period: BudgetPeriod } {
  try {
    return changedBudget(current, change);
  } catch (err) {
    if (err instanceof BudgetChangeError) throw new UsageError(`${periodFlag}: ${err.message}`);
    throw err;
  }
}
