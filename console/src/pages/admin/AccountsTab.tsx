import { useId, useState } from "react";
import { api, useApi } from "../../api.ts";
import { Badge } from "../../components/Badge.tsx";
import { BudgetCell, SpentCell } from "../../components/Budget.tsx";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { FormDialog } from "../../components/FormDialog.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty } from "../../components/Notice.tsx";
import { fmtDate, fmtInt, parseTokenCount } from "../../format.ts";
import { navigate } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { useSubmit } from "../../submit.ts";
import type { AccountAnswer, AccountView, List, PlansAnswer, PlanView } from "../../types.ts";
import { BudgetFields, useBudgetFields } from "./BudgetFields.tsx";

export function AccountsTab() {
  const { actAs } = useSession();
  const accounts = useApi<List<AccountView>>("/admin/accounts");
  const plans = useApi<PlansAnswer>("/plans");
  /** the dialog open: creating an account, or changing `account` */
  const dialog = useListDialog<{ account?: AccountView }>(accounts);
  const open = dialog.open;
  const planList = plans.data?.plans ?? [];

  return (
    <ListSection
      id="accounts-title"
      title="Accounts"
      action={{ label: "Create account", onClick: () => dialog.show({}) }}
      status={dialog.status}
    >
      <DataTable
        {...listRows(accounts)}
        loading="Loading the accounts"
        empty={<Empty title="No accounts yet." />}
        caption="Accounts"
        rowKey={(a) => a.id}
        columns={[
          { header: "Name", cell: (a) => a.name },
          { header: "Id", cell: (a) => <code className="small">{a.id}</code> },
          { header: "Plan", cell: (a) => a.plan_id },
          { header: "Quota", num: true, cell: (a) => fmtInt(a.quota_tokens) },
          { header: "Used", num: true, cell: (a) => fmtInt(a.used_tokens) },
          { header: "Remaining", num: true, cell: (a) => fmtInt(a.remaining_tokens) },
          { header: "Spent", num: true, cell: (a) => <SpentCell spent={a} /> },
          { header: "Budget", num: true, cell: (a) => <BudgetCell budget={a} /> },
          { header: "Status", cell: (a) => <Badge value={a.disabled ? "disabled" : "active"} /> },
          { header: "Created", className: "nowrap", cell: (a) => fmtDate(a.created_at) },
          {
            header: "Actions",
            cell: (a) => (
              <div className="row-actions">
                <button type="button" className="btn btn-small" onClick={() => dialog.show({ account: a })}>
                  Edit<span className="sr-only"> {a.name}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() => {
                    actAs(a);
                    navigate("/");
                  }}
                >
                  Open<span className="sr-only"> {a.name}'s pages</span>
                </button>
              </div>
            ),
          },
        ]}
      />
      {open && (
        <AccountDialog
          account={open.account}
          plans={planList}
          onClose={dialog.close}
          onSaved={(a) =>
            dialog.saved(
              open.account
                ? `Account ${a.name} saved.`
                : `Account ${a.name} created (${a.id}). Create a user for it under Users.`,
            )
          }
        />
      )}
    </ListSection>
  );
}

/** Creates an account, or with `account` changes it. */
function AccountDialog({
  account,
  plans,
  onClose,
  onSaved,
}: {
  account?: AccountView;
  plans: PlanView[];
  onClose: () => void;
  onSaved: (account: AccountView) => void;
}) {
  const [name, setName] = useState(account?.name ?? "");
  const [planId, setPlanId] = useState(account?.plan_id ?? plans[0]?.id ?? "");
  const planQuota = plans.find((p) => p.id === planId)?.quota_tokens;
  const ownQuota =
    account && Number(account.quota_tokens) !== Number(planQuota) ? String(account.quota_tokens) : "";
  const [quota, setQuota] = useState(ownQuota);
  const [disabled, setDisabled] = useState(account?.disabled ?? false);
  const budget = useBudgetFields(account);
  const id = useId();
  const submit = useSubmit(async () => {
    const quotaTokens = parseTokenCount(quota);
    if (quotaTokens === "invalid")
      throw new Error("The quota must be a whole number of tokens, or empty for the plan's.");
    const result = account
      ? await api<AccountAnswer>(`/admin/accounts/${encodeURIComponent(account.id)}`, {
          method: "PATCH",
          body: { plan_id: planId, quota_tokens: quotaTokens, disabled, ...budget.body() },
        })
      : await api<AccountAnswer>("/admin/accounts", {
          method: "POST",
          body: { name: name.trim(), plan_id: planId || undefined, quota_tokens: quotaTokens ?? undefined },
        });
    onSaved(result.account);
  });

  return (
    <FormDialog
      title={account ? `Edit ${account.name}` : "Create an account"}
      onClose={onClose}
      submit={submit}
      label={account ? "Save" : "Create account"}
      busyLabel="Saving…"
    >
      {!account && (
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input id={`${id}-name`} required value={name} onChange={(e) => setName(e.target.value)} />
        </div>
      )}
      <div className="field">
        <label htmlFor={`${id}-plan`}>Plan</label>
        <select id={`${id}-plan`} value={planId} onChange={(e) => setPlanId(e.target.value)}>
          {plans.map((p) => (
            <option key={p.id} value={p.id}>
              {p.id} ({fmtInt(p.quota_tokens)} tokens)
            </option>
          ))}
          {planId && !plans.some((p) => p.id === planId) && <option value={planId}>{planId}</option>}
        </select>
      </div>
      <div className="field">
        <label htmlFor={`${id}-quota`}>Quota (tokens)</label>
        <input
          id={`${id}-quota`}
          inputMode="numeric"
          value={quota}
          placeholder={planQuota === undefined ? "the plan's" : `the plan's: ${fmtInt(planQuota)}`}
          aria-describedby={`${id}-quota-hint`}
          onChange={(e) => setQuota(e.target.value)}
        />
        <p className="hint" id={`${id}-quota-hint`}>
          Empty: the plan's quota applies.
        </p>
      </div>
      {account && <BudgetFields fields={budget} spent={account} />}
      {account && (
        <div className="field field-check">
          <input
            id={`${id}-disabled`}
            type="checkbox"
            checked={disabled}
            onChange={(e) => setDisabled(e.target.checked)}
          />
          <label htmlFor={`${id}-disabled`}>Disabled: every key of the account is refused</label>
        </div>
      )}
    </FormDialog>
  );
}
