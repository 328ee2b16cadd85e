import { api, useApi } from "../../api.ts";
import { Badge } from "../../components/Badge.tsx";
import { BudgetCell, SpentCell } from "../../components/Budget.tsx";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { FormDialog } from "../../components/FormDialog.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty } from "../../components/Notice.tsx";
import { fmtInt } from "../../format.ts";
import { useSubmit } from "../../submit.ts";
import type { AdminKeyAnswer, AdminKeyView, List } from "../../types.ts";
import { BudgetFields, useBudgetFields } from "./BudgetFields.tsx";

export function KeysTab() {
  const keys = useApi<List<AdminKeyView>>("/admin/keys");
  /** the key whose budget is being set */
  const dialog = useListDialog<AdminKeyView>(keys);

  return (
    <ListSection
      id="keys-title"
      title="Keys"
      intro={
        <p className="muted small">
          Every account's keys and their money budgets. An account's own budget is set under Accounts; a call
          must fit both.
        </p>
      }
      status={dialog.status}
    >
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
            header: "Actions",
            hideHeader: true,
            cell: (k) => (
              <button type="button" className="btn btn-small" onClick={() => dialog.show(k)}>
                Budget<span className="sr-only"> of {k.prefix}</span>
              </button>
            ),
          },
        ]}
      />
      {dialog.open && (
        <KeyBudgetDialog
          keyToEdit={dialog.open}
          onClose={dialog.close}
          onSaved={(k) => dialog.saved(`Budget of ${k.prefix}… saved.`)}
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
