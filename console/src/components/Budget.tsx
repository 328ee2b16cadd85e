// A money budget (an account's or a key's, as BudgetView carries it) as the pages show it: in
// a sentence, and in table cells.
import { fmtResets, fmtUsd } from "../format.ts";
import type { BudgetView } from "../types.ts";

/** A money budget's figures in a sentence: spent of budget, in which period, and the reset. */
export function budgetText(b: BudgetView): string {
  if (b.budget_nanos === null) return `${fmtUsd(b.spent_nanos)} spent, no budget`;
  const period = b.budget_period === "month" ? " this month" : "";
  const resets =
    b.budget_resets_at === null ? "; does not reset" : `; resets ${fmtResets(b.budget_resets_at)}`;
  return `${fmtUsd(b.spent_nanos)} spent of ${fmtUsd(b.budget_nanos)}${period}${resets}`;
}

/** A key's or an account's money budget in a table cell: the amount, then what is left and when it resets. */
export function BudgetCell({ budget }: { budget: BudgetView }) {
  if (budget.budget_nanos === null) return <span className="muted">none</span>;
  return (
    <>
      {fmtUsd(budget.budget_nanos)}
      {budget.budget_period === "month" ? " / month" : ""}
      <span className="cell-sub">{fmtUsd(budget.left_nanos)} left</span>
      {budget.budget_resets_at !== null && (
        <span className="cell-sub" title={`resets ${fmtResets(budget.budget_resets_at)}`}>
          resets {fmtResets(budget.budget_resets_at, false)}
        </span>
      )}
    </>
  );
}

/** What a key or an account spent, and over what: this month for a monthly budget, else all time. */
export function SpentCell({ spent }: { spent: BudgetView }) {
  return (
    <>
      {fmtUsd(spent.spent_nanos)}
      <span className="cell-sub">{spent.budget_period === "month" ? "this month" : "all time"}</span>
    </>
  );
}
