// The money side of a hold, shared by every ledger: how many tokens a budget's room can pay
// for under a call's cost rule, and what holding them costs. Integers of nanodollars; the
// one division is checked back so float rounding can never hold a nanodollar too few.
import { type BudgetPeriod, spentIn } from "../prices/period.ts";
import type { CostRule, LedgerSubject, MoneyBudget, Reservation, Spent } from "./types.ts";

/** A subject's money when neither the account nor the key has a budget and nothing was spent. */
export const NO_MONEY = {
  accountBudget: null,
  accountSpent: { total: 0, month: 0, monthKey: "" },
  keyBudget: null,
  keySpent: { total: 0, month: 0, monthKey: "" },
} as const satisfies Pick<LedgerSubject, "accountBudget" | "accountSpent" | "keyBudget" | "keySpent">;

/** What holding `tokens` costs at most under `rule`. */
export function nanosFor(rule: CostRule, tokens: number): number {
  return rule.fixed + Math.ceil(Math.max(0, tokens - rule.promptTokens) * rule.perToken);
}

/** The most tokens `nanos` pays for under `rule` (Infinity: any number; -1: not even the prompt). */
export function tokensFor(rule: CostRule, nanos: number): number {
  if (nanos < rule.fixed) return -1;
  if (rule.perToken <= 0) return Infinity;
  let tokens = rule.promptTokens + Math.floor((nanos - rule.fixed) / rule.perToken);
  while (tokens > rule.promptTokens && nanosFor(rule, tokens) > nanos) tokens--;
  return tokens;
}

/** What a budget leaves by consumption alone (Infinity: no budget). */
export function budgetLeft(budget: MoneyBudget | null, spent: Spent, now: number): number {
  if (!budget) return Infinity;
  return budget.limit - spentIn(budget.period, spent, now);
}

/** Adds a charge made at month `monthKey` to stored-shape spending. */
export function addSpent(spent: Spent, nanos: number, monthKey: string): void {
  spent.total += nanos;
  spent.month = spent.monthKey === monthKey ? spent.month + nanos : nanos;
  spent.monthKey = monthKey;
}

/** A call's cost as charged: never more than the money it held, when a budget held some. */
export function chargeable(reservation: Reservation, nanos: number): number {
  const cost = Math.max(0, Math.round(nanos));
  return reservation.nanos === null ? cost : Math.min(cost, reservation.nanos);
}

export type { BudgetPeriod };
