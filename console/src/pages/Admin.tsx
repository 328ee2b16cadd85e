import { useId, useState } from "react";
import { api, useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { BudgetCell, SpentCell } from "../components/Budget.tsx";
import { DataTable, listRows } from "../components/DataTable.tsx";
import { FormDialog } from "../components/FormDialog.tsx";
import { Empty, ErrorNotice, Status } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtDate, fmtInt, fmtUsd, parseTokenCount, parseUsdAmount, usdInputValue } from "../format.ts";
import { Link, navigate } from "../router.tsx";
import { useSession } from "../session.tsx";
import { useSubmit } from "../submit.ts";
import {
  type AccountAnswer,
  type AccountView,
  type AdminKeyAnswer,
  type AdminKeyView,
  BUDGET_PERIODS,
  type BudgetPeriod,
  type BudgetView,
  type List,
  type PlansAnswer,
  type PlanView,
  ROLES,
  type Role,
  type UserAnswer,
  type UserView,
} from "../types.ts";
import { TicketList } from "./Tickets.tsx";

const TABS = [
  { id: "accounts", label: "Accounts" },
  { id: "keys", label: "Keys" },
  { id: "users", label: "Users" },
  { id: "tickets", label: "All tickets" },
];

export function AdminPage({ tab }: { tab: string }) {
  const current = TABS.some((t) => t.id === tab) ? tab : "accounts";
  return (
    <>
      <PageHeader title="Administration">
        <p>Every account, key, user and ticket of this gateway.</p>
      </PageHeader>
      <nav className="subnav" aria-label="Administration">
        <ul>
          {TABS.map((t) => (
            <li key={t.id}>
              <Link to={`/admin/${t.id}`} aria-current={t.id === current ? "page" : undefined}>
                {t.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {current === "accounts" && <AccountsAdmin />}
      {current === "keys" && <KeysAdmin />}
      {current === "users" && <UsersAdmin />}
      {current === "tickets" && (
        <section className="card section" aria-label="All tickets">
          <TicketList basePath="/admin/tickets" />
        </section>
      )}
    </>
  );
}

function AccountsAdmin() {
  const { actAs } = useSession();
  const accounts = useApi<List<AccountView>>("/admin/accounts");
  const plans = useApi<PlansAnswer>("/plans");
  /** the dialog open: creating an account, or changing `account` */
  const [open, setOpen] = useState<{ account?: AccountView } | null>(null);
  const [status, setStatus] = useState("");
  const planList = plans.data?.plans ?? [];

  return (
    <section className="card section" aria-labelledby="accounts-title">
      <div className="section-head">
        <h2 id="accounts-title">Accounts</h2>
        <button type="button" className="btn btn-primary" onClick={() => setOpen({})}>
          Create account
        </button>
      </div>
      {status && <Status>{status}</Status>}
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
                <button type="button" className="btn btn-small" onClick={() => setOpen({ account: a })}>
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
          onClose={() => setOpen(null)}
          onSaved={(a) => {
            setOpen(null);
            setStatus(
              open.account
                ? `Account ${a.name} saved.`
                : `Account ${a.name} created (${a.id}). Create a user for it under Users.`,
            );
            accounts.reload();
          }}
        />
      )}
    </section>
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

/** The budget fields' state, from what is set now, and the PATCH body they make. */
function useBudgetFields(current: BudgetView | undefined) {
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
function BudgetFields({ fields, spent }: { fields: ReturnType<typeof useBudgetFields>; spent: BudgetView }) {
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

function KeysAdmin() {
  const keys = useApi<List<AdminKeyView>>("/admin/keys");
  const [editing, setEditing] = useState<AdminKeyView | null>(null);
  const [status, setStatus] = useState("");

  return (
    <section className="card section" aria-labelledby="keys-title">
      <div className="section-head">
        <h2 id="keys-title">Keys</h2>
      </div>
      <p className="muted small">
        Every account's keys and their money budgets. An account's own budget is set under Accounts; a call
        must fit both.
      </p>
      {status && <Status>{status}</Status>}
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
              <button type="button" className="btn btn-small" onClick={() => setEditing(k)}>
                Budget<span className="sr-only"> of {k.prefix}</span>
              </button>
            ),
          },
        ]}
      />
      {editing && (
        <KeyBudgetDialog
          keyToEdit={editing}
          onClose={() => setEditing(null)}
          onSaved={(k) => {
            setEditing(null);
            setStatus(`Budget of ${k.prefix}… saved.`);
            keys.reload();
          }}
        />
      )}
    </section>
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

const ROLE_HINT: Record<Role, string> = {
  member: "reads the account, opens tickets",
  owner: "also manages keys and closes tickets",
  admin: "operates the whole gateway",
};

function UsersAdmin() {
  const users = useApi<List<UserView>>("/admin/users");
  const accounts = useApi<List<AccountView>>("/admin/accounts");
  const [open, setOpen] = useState<{ form: "create" } | { form: "role" | "password"; user: UserView } | null>(
    null,
  );
  const [status, setStatus] = useState("");
  const { me } = useSession();
  const accountName = (id: string) => accounts.data?.data.find((a) => a.id === id)?.name ?? id;
  const close = () => setOpen(null);
  function saved(message: string) {
    setOpen(null);
    setStatus(message);
    users.reload();
  }
  const toggle = useSubmit(async (user: UserView) => {
    await api(`/admin/users/${encodeURIComponent(user.id)}`, {
      method: "PATCH",
      body: { disabled: !user.disabled },
    });
    saved(`${user.email} ${user.disabled ? "enabled" : "disabled"}.`);
  });

  return (
    <section className="card section" aria-labelledby="users-title">
      <div className="section-head">
        <h2 id="users-title">Users</h2>
        <button type="button" className="btn btn-primary" onClick={() => setOpen({ form: "create" })}>
          Create user
        </button>
      </div>
      {status && <Status>{status}</Status>}
      <ErrorNotice error={toggle.error} />
      <DataTable
        {...listRows(users)}
        loading="Loading the users"
        empty={<Empty title="No users yet." />}
        caption="Console users"
        rowKey={(u) => u.id}
        columns={[
          { header: "E-mail", cell: (u) => u.email },
          { header: "Role", cell: (u) => u.role },
          { header: "Account", cell: (u) => accountName(u.account_id) },
          { header: "Status", cell: (u) => <Badge value={u.disabled ? "disabled" : "active"} /> },
          { header: "Created", className: "nowrap", cell: (u) => fmtDate(u.created_at) },
          {
            header: "Actions",
            cell: (u) => (
              <div className="row-actions">
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() => setOpen({ form: "role", user: u })}
                >
                  Role<span className="sr-only"> of {u.email}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() => setOpen({ form: "password", user: u })}
                >
                  Reset password<span className="sr-only"> of {u.email}</span>
                </button>
                {u.id !== me.user.id && (
                  <button type="button" className="btn btn-small" onClick={() => toggle.run(u)}>
                    {u.disabled ? "Enable" : "Disable"}
                    <span className="sr-only"> {u.email}</span>
                  </button>
                )}
              </div>
            ),
          },
        ]}
      />
      {open?.form === "create" && (
        <CreateUserDialog
          accounts={accounts.data?.data ?? []}
          onClose={close}
          onSaved={(u) => saved(`User ${u.email} created.`)}
        />
      )}
      {open?.form === "role" && (
        <RoleDialog user={open.user} onClose={close} onSaved={(u) => saved(`${u.email} is now ${u.role}.`)} />
      )}
      {open?.form === "password" && (
        <PasswordDialog
          user={open.user}
          onClose={close}
          onSaved={(u) => saved(`Password of ${u.email} reset.`)}
        />
      )}
    </section>
  );
}

function RoleSelect({ id, value, onChange }: { id: string; value: Role; onChange: (r: Role) => void }) {
  return (
    <div className="field">
      <label htmlFor={id}>Role</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value as Role)}>
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}: {ROLE_HINT[r]}
          </option>
        ))}
      </select>
    </div>
  );
}

function CreateUserDialog({
  accounts,
  onClose,
  onSaved,
}: {
  accounts: AccountView[];
  onClose: () => void;
  onSaved: (u: UserView) => void;
}) {
  const [email, setEmail] = useState("");
  const [accountId, setAccountId] = useState(accounts[0]?.id ?? "");
  const [role, setRole] = useState<Role>("owner");
  const [password, setPassword] = useState("");
  const id = useId();
  const submit = useSubmit(async () => {
    const { user } = await api<UserAnswer>("/admin/users", {
      method: "POST",
      body: { email: email.trim(), account_id: accountId, role, password },
    });
    onSaved(user);
  });
  return (
    <FormDialog
      title="Create a user"
      onClose={onClose}
      submit={submit}
      label="Create user"
      busyLabel="Creating…"
    >
      <div className="field">
        <label htmlFor={`${id}-email`}>E-mail</label>
        <input
          id={`${id}-email`}
          type="email"
          required
          autoComplete="off"
          value={email}
          onChange={(e) => setEmail(e.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-account`}>Account</label>
        <select
          id={`${id}-account`}
          required
          value={accountId}
          onChange={(e) => setAccountId(e.target.value)}
        >
          {accounts.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name} ({a.id})
            </option>
          ))}
        </select>
      </div>
      <RoleSelect id={`${id}-role`} value={role} onChange={setRole} />
      <div className="field">
        <label htmlFor={`${id}-password`}>Password</label>
        <input
          id={`${id}-password`}
          type="password"
          required
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
      </div>
    </FormDialog>
  );
}

function RoleDialog({
  user,
  onClose,
  onSaved,
}: {
  user: UserView;
  onClose: () => void;
  onSaved: (u: UserView) => void;
}) {
  const [role, setRole] = useState<Role>(user.role);
  const id = useId();
  const submit = useSubmit(async () => {
    const { user: saved } = await api<UserAnswer>(`/admin/users/${encodeURIComponent(user.id)}`, {
      method: "PATCH",
      body: { role },
    });
    onSaved(saved);
  });
  return (
    <FormDialog
      title={`Role of ${user.email}`}
      onClose={onClose}
      submit={submit}
      label="Save role"
      disabled={role === user.role}
    >
      <RoleSelect id={id} value={role} onChange={setRole} />
    </FormDialog>
  );
}

function PasswordDialog({
  user,
  onClose,
  onSaved,
}: {
  user: UserView;
  onClose: () => void;
  onSaved: (u: UserView) => void;
}) {
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const id = useId();
  const submit = useSubmit(async () => {
    if (password !== again) throw new Error("The two passwords differ.");
    await api(`/admin/users/${encodeURIComponent(user.id)}`, { method: "PATCH", body: { password } });
    onSaved(user);
  });
  return (
    <FormDialog
      title={`Reset the password of ${user.email}`}
      description="Give the new password to the user over a safe channel; they can sign in with it at once."
      onClose={onClose}
      submit={submit}
      label="Reset password"
    >
      <div className="field">
        <label htmlFor={`${id}-new`}>New password</label>
        <input
          id={`${id}-new`}
          type="password"
          required
          autoComplete="new-password"
          value={password}
          onChange={(e) => setPassword(e.target.value)}
        />
      </div>
      <div className="field">
        <label htmlFor={`${id}-again`}>New password, again</label>
        <input
          id={`${id}-again`}
          type="password"
          required
          autoComplete="new-password"
          value={again}
          onChange={(e) => setAgain(e.target.value)}
        />
      </div>
    </FormDialog>
  );
}
