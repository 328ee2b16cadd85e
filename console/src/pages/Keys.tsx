import { useId, useMemo, useState } from "react";
import { api, useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { BudgetCell, SpentCell } from "../components/Budget.tsx";
import { DataTable, listRows } from "../components/DataTable.tsx";
import { Dialog } from "../components/Dialog.tsx";
import { FormDialog } from "../components/FormDialog.tsx";
import { Empty, ErrorNotice, Status } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { SecretView } from "../components/SecretView.tsx";
import {
  fmtDate,
  fmtDateTime,
  fmtInt,
  fmtUsd,
  parseTokenCount,
  parseUsdAmount,
  usdInputValue,
  utcToday,
} from "../format.ts";
import { Link } from "../router.tsx";
import { useSession } from "../session.tsx";
import { useSubmit } from "../submit.ts";
import type { KeyAnswer, KeyCreated, KeyView, List, OverviewAnswer } from "../types.ts";

interface Usage {
  last30: number;
  /** nanodollars */
  last30Cost: number;
  todayTokens: number;
  todayCalls: number;
  todayCost: number;
}

export function KeysPage() {
  const { canManage } = useSession();
  const keys = useApi<List<KeyView>>("/keys");
  const overview = useApi<OverviewAnswer>("/overview");
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<KeyCreated | null>(null);
  const [editing, setEditing] = useState<KeyView | null>(null);
  const [deleting, setDeleting] = useState<KeyView | null>(null);
  const [status, setStatus] = useState("");

  const usage = useMemo(() => {
    // calls without a key have no row here
    const map = new Map<string | null, Usage>();
    const today = utcToday();
    for (const row of overview.data?.daily ?? []) {
      const u = map.get(row.key_id) ?? {
        last30: 0,
        last30Cost: 0,
        todayTokens: 0,
        todayCalls: 0,
        todayCost: 0,
      };
      u.last30 += Number(row.tokens);
      u.last30Cost += Number(row.cost_nanos);
      if (row.day === today) {
        u.todayTokens += Number(row.tokens);
        u.todayCalls += Number(row.calls);
        u.todayCost += Number(row.cost_nanos);
      }
      map.set(row.key_id, u);
    }
    return map;
  }, [overview.data]);

  const toggle = useSubmit(async (key: KeyView) => {
    await api(`/keys/${encodeURIComponent(key.id)}`, {
      method: "PATCH",
      body: { disabled: !key.disabled },
    });
    changed(`Key ${key.prefix}… ${key.disabled ? "enabled" : "disabled"}.`);
  });

  function changed(message: string) {
    setStatus(message);
    toggle.clearError();
    keys.reload();
  }

  return (
    <>
      <PageHeader
        title="Keys"
        actions={
          canManage && (
            <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
              Create key
            </button>
          )
        }
      >
        <p>
          API keys call the gateway's <code>/v1</code> API. Use one key per application, so you can see what
          each one consumes and disable one without stopping the others.
          {!canManage && " Only the account's owners can create or change keys."}
        </p>
      </PageHeader>
      {status && <Status>{status}</Status>}
      <ErrorNotice error={toggle.error} />
      <DataTable
        {...listRows(keys)}
        loading="Loading the keys"
        empty={
          <Empty title="No keys yet.">
            {canManage
              ? "Create a key to start calling the API."
              : "Ask an owner of the account to create one."}
          </Empty>
        }
        boxClassName="card"
        caption="API keys of the account and what each consumed"
        rowKey={(key) => key.id}
        columns={[
          {
            header: "Key",
            className: "nowrap",
            cell: (key) => (
              <>
                {key.name ? (
                  <span className="cell-main">{key.name}</span>
                ) : (
                  <span className="muted">unnamed</span>
                )}
                <code className="cell-sub">{key.prefix}…</code>
              </>
            ),
          },
          { header: "Status", cell: (key) => <Badge value={key.disabled ? "disabled" : "enabled"} /> },
          { header: "Used", num: true, cell: (key) => fmtInt(key.used_tokens) },
          {
            header: "Limit",
            num: true,
            cell: (key) =>
              key.limit_tokens === null ? <span className="muted">none</span> : fmtInt(key.limit_tokens),
          },
          {
            header: "Per session",
            num: true,
            cell: (key) =>
              key.session_limit_tokens === null && key.session_budget_nanos === null ? (
                <span className="muted">no cap</span>
              ) : (
                <>
                  {key.session_limit_tokens !== null && `${fmtInt(key.session_limit_tokens)} tokens`}
                  {key.session_budget_nanos !== null && (
                    <span className={key.session_limit_tokens === null ? undefined : "cell-sub"}>
                      {fmtUsd(key.session_budget_nanos)}
                    </span>
                  )}
                </>
              ),
          },
          { header: "Spent", num: true, cell: (key) => <SpentCell spent={key} /> },
          { header: "Budget", num: true, cell: (key) => <BudgetCell budget={key} /> },
          {
            header: "30 days",
            num: true,
            cell: (key) => (
              <>
                {fmtInt(usage.get(key.id)?.last30 ?? 0)}
                <span className="cell-sub">{fmtUsd(usage.get(key.id)?.last30Cost ?? 0)}</span>
              </>
            ),
          },
          {
            header: "Today",
            num: true,
            cell: (key) => {
              const u = usage.get(key.id);
              return (
                <>
                  {fmtInt(u?.todayTokens ?? 0)}
                  <span className="cell-sub">
                    {fmtInt(u?.todayCalls ?? 0)} {u?.todayCalls === 1 ? "call" : "calls"}
                  </span>
                  <span className="cell-sub">{fmtUsd(u?.todayCost ?? 0)}</span>
                </>
              );
            },
          },
          {
            header: "Created",
            className: "nowrap",
            title: (key) => fmtDateTime(key.created_at),
            cell: (key) => fmtDate(key.created_at),
          },
          canManage && {
            header: "Actions",
            hideHeader: true,
            cell: (key) => (
              <div className="row-actions">
                <button type="button" className="btn btn-small" onClick={() => setEditing(key)}>
                  Edit<span className="sr-only"> {key.prefix}</span>
                </button>
                <button type="button" className="btn btn-small" onClick={() => toggle.run(key)}>
                  {key.disabled ? "Enable" : "Disable"}
                  <span className="sr-only"> {key.prefix}</span>
                </button>
                <button type="button" className="btn btn-small btn-danger" onClick={() => setDeleting(key)}>
                  Delete<span className="sr-only"> {key.prefix}</span>
                </button>
              </div>
            ),
          },
        ]}
      />
      <p className="muted small">
        Used: tokens, all time. Spent: dollars, this month for a monthly budget, else all time. A key's
        budget, in dollars, is set by the gateway's administrators; a call it cannot cover is refused. 30 days
        and Today count UTC days, today included, in tokens and dollars. Per session: what each agent session
        (a Claude Code or Codex run, or calls sharing an <code>x-session-id</code>) may use through the key,
        in all; its next call past the cap is refused. Per-call detail is in{" "}
        <Link to="/records">Call records</Link>, per session in <Link to="/sessions">Sessions</Link>.
      </p>

      <CreateKeyDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(result) => {
          setCreating(false);
          setCreated(result);
          changed(`Key ${result.key.prefix}… created.`);
        }}
      />
      <Dialog
        open={created !== null}
        title="Your new key"
        onClose={() => setCreated(null)}
        description="Copy it now: this is the only time the gateway shows the whole key. It keeps only a hash."
      >
        {created && (
          <SecretView label="API key" secret={created.secret} onDone={() => setCreated(null)}>
            Use one key per application: give each app, service or environment its own key, so its consumption
            shows separately and you can disable it alone.
          </SecretView>
        )}
      </Dialog>
      {editing && (
        <EditKeyDialog
          keyToEdit={editing}
          onClose={() => setEditing(null)}
          onSaved={(key) => {
            setEditing(null);
            changed(`Key ${key.prefix}… saved.`);
          }}
        />
      )}
      <Dialog open={deleting !== null} title="Delete this key?" onClose={() => setDeleting(null)}>
        {deleting && (
          <DeleteKey
            keyToDelete={deleting}
            onCancel={() => setDeleting(null)}
            onDeleted={() => {
              const prefix = deleting.prefix;
              setDeleting(null);
              changed(`Key ${prefix}… deleted.`);
            }}
          />
        )}
      </Dialog>
    </>
  );
}

/** What the key forms edit, as typed. */
interface KeyForm {
  name: string;
  limit: string;
  sessionLimit: string;
  sessionBudget: string;
}

const EMPTY_FORM: KeyForm = { name: "", limit: "", sessionLimit: "", sessionBudget: "" };

function formOf(key: KeyView): KeyForm {
  return {
    name: key.name ?? "",
    limit: key.limit_tokens === null ? "" : String(key.limit_tokens),
    sessionLimit: key.session_limit_tokens === null ? "" : String(key.session_limit_tokens),
    sessionBudget: key.session_budget_nanos === null ? "" : usdInputValue(key.session_budget_nanos),
  };
}

/** The form as the API takes it; throws the reason a field is refused, for the form. */
function bodyOf(form: KeyForm) {
  const sessionLimit = limitOf(form.sessionLimit, "The per-session token cap");
  if (sessionLimit === 0) throw new Error("The per-session token cap must be above 0, or empty for none.");
  const sessionBudget = parseUsdAmount(form.sessionBudget, "The per-session budget");
  if (sessionBudget === 0) throw new Error("The per-session budget must be above $0, or empty for none.");
  return {
    name: form.name.trim() || null,
    limit_tokens: limitOf(form.limit, "The token limit"),
    session_limit_tokens: sessionLimit,
    session_budget_nanos: sessionBudget,
  };
}

function KeyFields({ form, setForm }: { form: KeyForm; setForm: (f: KeyForm) => void }) {
  const nameId = useId();
  const limitId = useId();
  const sessionLimitId = useId();
  const sessionBudgetId = useId();
  return (
    <>
      <div className="field">
        <label htmlFor={nameId}>Name</label>
        <input
          id={nameId}
          value={form.name}
          maxLength={100}
          placeholder="e.g. billing-service (production)"
          onChange={(e) => setForm({ ...form, name: e.target.value })}
        />
        <p className="hint">The application that will use it.</p>
      </div>
      <div className="field">
        <label htmlFor={limitId}>Token limit</label>
        <input
          id={limitId}
          inputMode="numeric"
          value={form.limit}
          placeholder="no limit"
          aria-describedby={`${limitId}-hint`}
          onChange={(e) => setForm({ ...form, limit: e.target.value })}
        />
        <p className="hint" id={`${limitId}-hint`}>
          Total tokens this key may consume; empty for no limit of its own (the account's quota still
          applies).
        </p>
      </div>
      <div className="field">
        <label htmlFor={sessionLimitId}>Per-session token cap</label>
        <input
          id={sessionLimitId}
          inputMode="numeric"
          value={form.sessionLimit}
          placeholder="no cap"
          aria-describedby={`${sessionLimitId}-hint`}
          onChange={(e) => setForm({ ...form, sessionLimit: e.target.value })}
        />
        <p className="hint" id={`${sessionLimitId}-hint`}>
          Tokens each agent session may use through this key (a Claude Code or Codex run, or the calls that
          send one <code>x-session-id</code>); empty for no cap.
        </p>
      </div>
      <div className="field">
        <label htmlFor={sessionBudgetId}>Per-session budget (USD)</label>
        <input
          id={sessionBudgetId}
          inputMode="decimal"
          value={form.sessionBudget}
          placeholder="no cap"
          aria-describedby={`${sessionBudgetId}-hint`}
          onChange={(e) => setForm({ ...form, sessionBudget: e.target.value })}
        />
        <p className="hint" id={`${sessionBudgetId}-hint`}>
          Dollars each agent session may cost through this key, in all; empty for no cap.
        </p>
      </div>
    </>
  );
}

/** "" is no limit; anything else must be a whole number of tokens */
function limitOf(text: string, what: string): number | null {
  const limit = parseTokenCount(text);
  if (limit === "invalid") throw new Error(`${what} must be a whole number, or empty for none.`);
  return limit;
}

/** Mounted with the page, so what was typed stays when the dialog is closed and opened again. */
function CreateKeyDialog({
  open,
  onClose,
  onCreated,
}: {
  open: boolean;
  onClose: () => void;
  onCreated: (result: KeyCreated) => void;
}) {
  const [form, setForm] = useState(EMPTY_FORM);
  const submit = useSubmit(async () => {
    // what is not set is left out: the key takes the defaults
    const body = Object.fromEntries(Object.entries(bodyOf(form)).filter(([, v]) => v !== null));
    const result = await api<KeyCreated>("/keys", { method: "POST", body });
    setForm(EMPTY_FORM);
    onCreated(result);
  });

  return (
    <FormDialog
      open={open}
      title="Create a key"
      onClose={onClose}
      description="Use one key per application: one for each app or service that calls the API."
      submit={submit}
      label="Create key"
      busyLabel="Creating…"
    >
      <KeyFields form={form} setForm={setForm} />
    </FormDialog>
  );
}

function EditKeyDialog({
  keyToEdit,
  onClose,
  onSaved,
}: {
  keyToEdit: KeyView;
  onClose: () => void;
  onSaved: (key: KeyView) => void;
}) {
  const [form, setForm] = useState(() => formOf(keyToEdit));
  const submit = useSubmit(async () => {
    const { key } = await api<KeyAnswer>(`/keys/${encodeURIComponent(keyToEdit.id)}`, {
      method: "PATCH",
      body: bodyOf(form),
    });
    onSaved(key);
  });

  return (
    <FormDialog
      title={`Edit key ${keyToEdit.prefix}…`}
      onClose={onClose}
      submit={submit}
      label="Save"
      busyLabel="Saving…"
    >
      <KeyFields form={form} setForm={setForm} />
      <p className="muted small">
        Used so far: {fmtInt(keyToEdit.used_tokens)} tokens; {fmtUsd(keyToEdit.spent_nanos)} spent
        {keyToEdit.budget_period === "month" ? " this month" : ""}.
      </p>
    </FormDialog>
  );
}

function DeleteKey({
  keyToDelete,
  onCancel,
  onDeleted,
}: {
  keyToDelete: KeyView;
  onCancel: () => void;
  onDeleted: () => void;
}) {
  const remove = useSubmit(async () => {
    await api(`/keys/${encodeURIComponent(keyToDelete.id)}`, { method: "DELETE" });
    onDeleted();
  });
  return (
    <>
      <ErrorNotice error={remove.error} />
      <p>
        <code>{keyToDelete.prefix}…</code> {keyToDelete.name && <strong>{keyToDelete.name}</strong>} stops
        working at once: every application using it gets "invalid API key". Its call records and consumption
        stay. This cannot be undone.
      </p>
      <div className="dialog-actions">
        <button type="button" className="btn" onClick={onCancel} data-autofocus>
          Keep the key
        </button>
        <button type="button" className="btn btn-danger" onClick={() => remove.run()} disabled={remove.busy}>
          {remove.busy ? "Deleting…" : "Delete key"}
        </button>
      </div>
    </>
  );
}
