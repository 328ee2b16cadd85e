// A money budget as the admin's forms set it, an account's (AccountDialog) or a key's
// (KeyBudgetDialog): the same fields and the same PATCH body for both.
import { useId, useState } from "react";
import { fmtUsd, parseUsdAmount, usdInputValue } from "../../format.ts";
import { BUDGET_PERIODS, type BudgetPeriod, type BudgetView } from "../../types.ts";

/** The budget fields' state, from what is set now, and the PATCH body they make. */
export function useBudgetFields(current: BudgetView | undefined) {
  const [amount, setAmount] = useState(
    current === undefined || current.budget_nanos === null ? "" : usdInputValue(current.budget_nanos),
  );
  const [period, setPeriod] = useState<BudgetPeriod>(current?.budget_period ?? "none");
  return {
    amount,
    setAmount,
    period,
    setPeriod,
    /** what to send: an empty amount removes the budget (and its period); throws on bad input */
    body(): { budget_nanos: number | null; budget_period: BudgetPeriod } {
      const nanos = parseUsdAmount(amount, "The budget");
      return { budget_nanos: nanos, budget_period: nanos === null ? "none" : period };
    },
  };
}

const PERIOD_LABELS: Record<BudgetPeriod, string> = {
  none: "never: the budget is for all time",
  month: "monthly: on the 1st, 00:00 UTC",
};

/** An amount in dollars and when it resets; under them what counts against it now. */
export function BudgetFields({
  fields,
  spent,
}: {
  fields: ReturnType<typeof useBudgetFields>;
  spent: BudgetView;
}) {
  const id = useId();
  return (
    <>
      <div className="field">
        <label htmlFor={`${id}-amount`}>Budget (USD)</label>
        <input
          id={`${id}-amount`}
          inputMode="decimal"
          value={fields.amount}
          placeholder="no budget"
          aria-describedby={`${id}-amount-hint`}
          onChange={(e) => fields.setAmount(e.target.value)}
        />
        <p className="hint" id={`${id}-amount-hint`}>
          Dollars, e.g. 25 or 0.50; empty for no budget. A call that could cost more than what is left is
          refused ({fmtUsd(spent.spent_nanos)} spent{spent.budget_period === "month" ? " this month" : ""}).
        </p>
      </div>
      <div className="field">
        <label htmlFor={`${id}-period`}>Resets</label>
        <select
          id={`${id}-period`}
          value={fields.period}
          disabled={fields.amount.trim() === ""}
          onChange={(e) => fields.setPeriod(e.target.value as BudgetPeriod)}
        >
          {BUDGET_PERIODS.map((p) => (
            <option key={p} value={p}>
              {PERIOD_LABELS[p]}
            </option>
          ))}
        </select>
      </div>
    </>
  );
}
