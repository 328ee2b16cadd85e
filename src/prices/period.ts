// Budget periods. A monthly budget resets at the start of each calendar month, UTC; a budget
// without a period never resets. Spending is kept both ways (in total and for the month it
// was charged in), so an operator can switch a budget's period without losing what was spent.

export const BUDGET_PERIODS = ["none", "month"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** "YYYY-MM" of the UTC month `ms` falls in: the month a charge made at `ms` counts for. */
export function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** When a budget of `period` next resets after `ms` (null: it never does). */
export function resetsAt(period: BudgetPeriod, ms: number): Date | null {
  if (period === "none") return null;
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}

/** What counts against a budget of `period` now, from the stored total and month figures. */
export function spentIn(
  period: BudgetPeriod,
  spent: { total: number; month: number; monthKey: string },
  ms: number,
): number {
  if (period === "none") return spent.total;
  return spent.monthKey === monthOf(ms) ? spent.month : 0;
}
