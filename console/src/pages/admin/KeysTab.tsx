import { useId, useState } from "react";
import { KEYS_PATH, patchKey, useAdminList } from "../../admin-api.ts";
import type { AdminApiKeyView } from "../../admin-types.ts";
import { api, useApi } from "../../api.ts";
import { Badge } from "../../components/Badge.tsx";
import { BudgetCell, SpentCell } from "../../components/Budget.tsx";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { FormDialog } from "../../components/FormDialog.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty, ErrorNotice } from "../../components/Notice.tsx";
import { fmtInt, parseTokenCount } from "../../format.ts";
import { useSubmit } from "../../submit.ts";
import type { AccountView, AdminKeyAnswer, AdminKeyView, List, PlansAnswer, PlanView } from "../../types.ts";
import { BudgetFields, useBudgetFields } from "./BudgetFields.tsx";

export function KeysTab() {
  const keys = useApi<List<AdminKeyView>>("/admin/keys");
  // rate limits and models come from the admin API; budgets from the console API, as before
  const limits = useAdminList<AdminApiKeyView>(KEYS_PATH);
  const accounts = useApi<List<AccountView>>("/admin/accounts");
  const plans = useApi<PlansAnswer>("/plans");
  /** the key whose budget, or whose rate limits and models, are being set */
  const dialog = useListDialog<{ form: "budget" | "limits"; key: AdminKeyView }>({
    reload: () => {
      keys.reload();
      limits.reload();
    },
  });
  const limitsOf = (k: AdminKeyView) => limits.data?.data.find((l) => l.id === k.id);
  const planOf = (k: AdminKeyView) => {
    const planId = accounts.data?.data.find((a) => a.id === k.account_id)?.plan_id;
    return plans.data?.plans.find((p) => p.id === planId);
  };

  return (
    <ListSection
      id="keys-title"
      title="Keys"
      intro={
        <p className="muted small">
          Every account's keys: their money budgets, rate limits and models. An account's own budget is set
          under Accounts; a call must fit both. A key without limits or models of its own has its plan's.
        </p>
      }
      status={dialog.status}
    >
      <ErrorNotice error={limits.error} onRetry={limits.reload} />
      <DataTable
        {...listRows(keys)}
        loading="Loading the keys"
        empty={<Empty title="No keys yet." />}
        caption="Every account's API keys with their budgets"
        rowKey={(k) => k.id}
        columns={[
          { header: "Account", cell: (k) => k.account_name },
          {
            header: "Key",
            className: "nowrap",
            cell: (k) => (
              <>
                {k.name ? (
                  <span className="cell-main">{k.name}</span>
                ) : (
                  <span className="muted">unnamed</span>
                )}
                <code className="cell-sub">{k.prefix}…</code>
              </>
            ),
          },
          { header: "Status", cell: (k) => <Badge value={k.disabled ? "disabled" : "enabled"} /> },
          { header: "Used", num: true, cell: (k) => fmtInt(k.used_tokens) },
          { header: "Spent", num: true, cell: (k) => <SpentCell spent={k} /> },
          { header: "Budget", num: true, cell: (k) => <BudgetCell budget={k} /> },
          {
            header: "Rate limits",
            className: "nowrap",
            cell: (k) => {
              const l = limitsOf(k);
              if (!l) return <span className="muted">–</span>;
              const plan = planOf(k)?.rate_limits.key;
              return (
                <>
                  <RateCell own={l.rpm_limit} plan={plan?.rpm ?? null} unit="rpm" />
                  <RateCell own={l.tpm_limit} plan={plan?.tpm ?? null} unit="tpm" />
                </>
              );
            },
          },
          {
            header: "Models",
            cell: (k) => {
              const l = limitsOf(k);
              if (!l) return <span className="muted">–</span>;
              return l.allowed_models === null ? (
                <span className="muted">the plan's</span>
              ) : l.allowed_models.length === 0 ? (
                "none"
              ) : (
                l.allowed_models.join(", ")
              );
            },
          },
          {
            header: "Actions",
            hideHeader: true,
            cell: (k) => (
              <div className="row-actions">
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() => dialog.show({ form: "budget", key: k })}
                >
                  Budget<span className="sr-only"> of {k.prefix}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={!limitsOf(k)}
                  onClick={() => dialog.show({ form: "limits", key: k })}
                >
                  Limits<span className="sr-only"> of {k.prefix}</span>
                </button>
              </div>
            ),
          },
        ]}
      />
      {dialog.open?.form === "budget" && (
        <KeyBudgetDialog
          keyToEdit={dialog.open.key}
          onClose={dialog.close}
          onSaved={(k) => dialog.saved(`Budget of ${k.prefix}… saved.`)}
        />
      )}
      {dialog.open?.form === "limits" && limitsOf(dialog.open.key) && (
        <KeyLimitsDialog
          keyToEdit={dialog.open.key}
          limits={limitsOf(dialog.open.key)!}
          plan={planOf(dialog.open.key)}
          onClose={dialog.close}
          onSaved={(k) => dialog.saved(`Limits of ${k.prefix}… saved.`)}
        />
      )}
    </ListSection>
  );
}

function KeyBudgetDialog({
  keyToEdit,
  onClose,
  onSaved,
}: {
  keyToEdit: AdminKeyView;
  onClose: () => void;
  onSaved: (key: AdminKeyView) => void;
}) {
  const budget = useBudgetFields(keyToEdit);
  const submit = useSubmit(async () => {
    const { key } = await api<AdminKeyAnswer>(`/admin/keys/${encodeURIComponent(keyToEdit.id)}`, {
      method: "PATCH",
      body: budget.body(),
    });
    onSaved(key);
  });
  return (
    <FormDialog
      title={`Budget of ${keyToEdit.prefix}…`}
      description={`${keyToEdit.name ?? "Unnamed key"} of ${keyToEdit.account_name}`}
      onClose={onClose}
      submit={submit}
      label="Save budget"
      busyLabel="Saving…"
    >
      <BudgetFields fields={budget} spent={keyToEdit} />
    </FormDialog>
  );
}

/** A key's own rate (its plan's default when it has none). */
function RateCell({ own, plan, unit }: { own: number | null; plan: number | null; unit: "rpm" | "tpm" }) {
  if (own !== null)
    return (
      <span className="cell-main" style={{ display: "block" }}>
        {fmtInt(own)} {unit}
      </span>
    );
  return (
    <span className="cell-sub">{plan === null ? `no ${unit} limit` : `${fmtInt(plan)} ${unit}`} (plan)</span>
  );
}

/** A whole number typed for a limit; empty is the plan's default (null). */
function rateOf(text: string, what: string): number | null {
  const n = parseTokenCount(text);
  if (n === "invalid" || n === 0)
    throw new Error(`${what} must be a whole number of at least 1, or empty for the plan's.`);
  return n;
}

function KeyLimitsDialog({
  keyToEdit,
  limits,
  plan,
  onClose,
  onSaved,
}: {
  keyToEdit: AdminKeyView;
  limits: AdminApiKeyView;
  /** the plan of the key's account, when it is known */
  plan: PlanView | undefined;
  onClose: () => void;
  onSaved: (key: AdminKeyView) => void;
}) {
  const id = useId();
  const [rpm, setRpm] = useState(limits.rpm_limit === null ? "" : String(limits.rpm_limit));
  const [tpm, setTpm] = useState(limits.tpm_limit === null ? "" : String(limits.tpm_limit));
  const [restrict, setRestrict] = useState(limits.allowed_models !== null);
  const [models, setModels] = useState<string[]>(limits.allowed_models ?? plan?.models ?? []);
  // models the key was allowed that its plan no longer has stay listed, so they can be removed
  const listed = [...(plan?.models ?? []), ...models.filter((m) => !plan?.models.includes(m))];
  const submit = useSubmit(async () => {
    await patchKey(keyToEdit.id, {
      rpm_limit: rateOf(rpm, "Requests per minute"),
      tpm_limit: rateOf(tpm, "Tokens per minute"),
      allowed_models: restrict ? models : null,
    });
    onSaved(keyToEdit);
  });
  const placeholder = (v: number | null | undefined, unit: string) =>
    v === null || v === undefined ? "the plan's: no limit" : `the plan's: ${fmtInt(v)} ${unit}`;
  return (
    <FormDialog
      title={`Limits of ${keyToEdit.prefix}…`}
      description={`${keyToEdit.name ?? "Unnamed key"} of ${keyToEdit.account_name}${plan ? `, plan ${plan.id}` : ""}`}
      onClose={onClose}
      submit={submit}
      label="Save limits"
      busyLabel="Saving…"
    >
      <div className="form-grid">
        <div className="field">
          <label htmlFor={`${id}-rpm`}>Requests per minute</label>
          <input
            id={`${id}-rpm`}
            inputMode="numeric"
            value={rpm}
            placeholder={placeholder(plan?.rate_limits.key.rpm, "rpm")}
            onChange={(e) => setRpm(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-tpm`}>Tokens per minute</label>
          <input
            id={`${id}-tpm`}
            inputMode="numeric"
            value={tpm}
            placeholder={placeholder(plan?.rate_limits.key.tpm, "tpm")}
            onChange={(e) => setTpm(e.target.value)}
          />
        </div>
      </div>
      <p className="hint">Empty: the plan's limit for each key. The account's own limits still apply.</p>
      <fieldset className="fieldset">
        <legend>Models</legend>
        <div className="field field-check">
          <input
            id={`${id}-all`}
            type="radio"
            name={`${id}-models`}
            checked={!restrict}
            onChange={() => setRestrict(false)}
          />
          <label htmlFor={`${id}-all`}>Every model of the plan</label>
        </div>
        <div className="field field-check">
          <input
            id={`${id}-some`}
            type="radio"
            name={`${id}-models`}
            checked={restrict}
            onChange={() => setRestrict(true)}
          />
          <label htmlFor={`${id}-some`}>Only these</label>
        </div>
        {restrict && (
          <fieldset className="check-grid bare-fieldset">
            <legend className="sr-only">Allowed models</legend>
            {listed.map((m) => (
              <div className="field field-check" key={m}>
                <input
                  id={`${id}-model-${m}`}
                  type="checkbox"
                  checked={models.includes(m)}
                  onChange={(e) =>
                    setModels((list) => (e.target.checked ? [...list, m] : list.filter((x) => x !== m)))
                  }
                />
                <label htmlFor={`${id}-model-${m}`}>{m}</label>
              </div>
            ))}
            {listed.length === 0 && <p className="muted small">The plan has no models.</p>}
          </fieldset>
        )}
      </fieldset>
    </FormDialog>
  );
}
