// Budget periods. A monthly budget resets at the start of each calendar month, UTC; a budget
// without a period never resets. Spending is kept both ways (in total and for the month it
// was charged in), so an operator can switch a budget's period without losing what was spent.

export const BUDGET_PERIODS = ["none", "month"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** The last month asked for, as [start, end) in ms: every charge asks, and months are long. */
let lastMonth = { from: 0, to: 0, key: "" };

/** "YYYY-MM" of the UTC month `ms` falls in: the month a charge made at `ms` counts for. */
export function monthOf(ms: number): string {
  if (ms >= lastMonth.from && ms < lastMonth.to) return lastMonth.key;
  const d = new Date(ms);
  const from = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  const to = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  lastMonth = { from, to, key: d.toISOString().slice(0, 7) };
  return lastMonth.key;
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
