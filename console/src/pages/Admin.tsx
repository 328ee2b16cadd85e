import { type FormEvent, useId, useState } from "react";
import { api, useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { Dialog } from "../components/Dialog.tsx";
import { FormActions } from "../components/FormActions.tsx";
import { Empty, ErrorNotice, Loading, Status } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtDate, fmtInt } from "../format.ts";
import { Link, navigate } from "../router.tsx";
import { useSession } from "../session.tsx";
import type { Account, Plan, Role, User } from "../types.ts";
import { TicketList } from "./Tickets.tsx";

const TABS = [
  { id: "accounts", label: "Accounts" },
  { id: "users", label: "Users" },
  { id: "tickets", label: "All tickets" },
];

export function AdminPage({ tab }: { tab: string }) {
  const current = TABS.some((t) => t.id === tab) ? tab : "accounts";
  return (
    <>
      <PageHeader title="Administration">
        <p>Every account, user and ticket of this gateway.</p>
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
      {current === "users" && <UsersAdmin />}
      {current === "tickets" && (
        <section className="card section" aria-label="All tickets">
          <TicketList basePath="/admin/tickets" />
        </section>
      )}
    </>
  );
}

/** "" means the plan's quota; anything else a whole number of tokens */
function parseQuota(text: string): number | null | "invalid" {
  const t = text.replaceAll(/[\s,_]/g, "");
  if (t === "") return null;
  return /^\d+$/.test(t) ? Number(t) : "invalid";
}

function AccountsAdmin() {
  const { actAs } = useSession();
  const accounts = useApi<{ data: Account[] }>("/admin/accounts");
  const plans = useApi<{ current: Plan; plans: Plan[] }>("/plans");
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Account | null>(null);
  const [status, setStatus] = useState("");
  const planList = plans.data?.plans ?? [];

  return (
    <section className="card section" aria-labelledby="accounts-title">
      <div className="section-head">
        <h2 id="accounts-title">Accounts</h2>
        <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
          Create account
        </button>
      </div>
      {status && <Status>{status}</Status>}
      {accounts.error ? (
        <ErrorNotice error={accounts.error} onRetry={accounts.reload} />
      ) : !accounts.data ? (
        <Loading what="Loading the accounts" />
      ) : accounts.data.data.length === 0 ? (
        <Empty title="No accounts yet." />
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Accounts</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Id</th>
                <th scope="col">Plan</th>
                <th scope="col" className="num">
                  Quota
                </th>
                <th scope="col" className="num">
                  Used
                </th>
                <th scope="col" className="num">
                  Remaining
                </th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {accounts.data.data.map((a) => (
                <tr key={a.id}>
                  <td>{a.name}</td>
                  <td>
                    <code className="small">{a.id}</code>
                  </td>
                  <td>{a.plan_id}</td>
                  <td className="num">{fmtInt(a.quota_tokens)}</td>
                  <td className="num">{fmtInt(a.used_tokens)}</td>
                  <td className="num">{fmtInt(a.remaining_tokens)}</td>
                  <td>
                    <Badge value={a.disabled ? "disabled" : "active"} />
                  </td>
                  <td className="nowrap">{fmtDate(a.created_at)}</td>
                  <td>
                    <div className="row-actions">
                      <button type="button" className="btn btn-small" onClick={() => setEditing(a)}>
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
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Dialog open={creating} title="Create an account" onClose={() => setCreating(false)}>
        {creating && (
          <AccountForm
            plans={planList}
            onCancel={() => setCreating(false)}
            onSaved={(a) => {
              setCreating(false);
              setStatus(`Account ${a.name} created (${a.id}). Create a user for it under Users.`);
              accounts.reload();
            }}
          />
        )}
      </Dialog>
      <Dialog
        open={editing !== null}
        title={`Edit ${editing?.name ?? "account"}`}
        onClose={() => setEditing(null)}
      >
        {editing && (
          <AccountForm
            account={editing}
            plans={planList}
            onCancel={() => setEditing(null)}
            onSaved={(a) => {
              setEditing(null);
              setStatus(`Account ${a.name} saved.`);
              accounts.reload();
            }}
          />
        )}
      </Dialog>
    </section>
  );
}

function AccountForm({
  account,
  plans,
  onCancel,
  onSaved,
}: {
  account?: Account;
  plans: Plan[];
  onCancel: () => void;
  onSaved: (account: Account) => void;
}) {
  const [name, setName] = useState(account?.name ?? "");
  const [planId, setPlanId] = useState(account?.plan_id ?? plans[0]?.id ?? "");
  const planQuota = plans.find((p) => p.id === planId)?.quota_tokens;
  const ownQuota =
    account && Number(account.quota_tokens) !== Number(planQuota) ? String(account.quota_tokens) : "";
  const [quota, setQuota] = useState(ownQuota);
  const [disabled, setDisabled] = useState(account?.disabled ?? false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();

  async function submit(event: FormEvent) {
    event.preventDefault();
    const quotaTokens = parseQuota(quota);
    if (quotaTokens === "invalid") {
      setError(new Error("The quota must be a whole number of tokens, or empty for the plan's."));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const result = account
        ? await api<{ account: Account }>(`/admin/accounts/${encodeURIComponent(account.id)}`, {
            method: "PATCH",
            body: { plan_id: planId, quota_tokens: quotaTokens, disabled },
          })
        : await api<{ account: Account }>("/admin/accounts", {
            method: "POST",
            body: { name: name.trim(), plan_id: planId || undefined, quota_tokens: quotaTokens ?? undefined },
          });
      onSaved(result.account);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }

  return (
    <form onSubmit={submit}>
      <ErrorNotice error={error} />
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
      <FormActions onCancel={onCancel} disabled={busy}>
        {busy ? "Saving…" : account ? "Save" : "Create account"}
      </FormActions>
    </form>
  );
}

const ROLES: Role[] = ["member", "owner", "admin"];
const ROLE_HINT: Record<Role, string> = {
  member: "reads the account, opens tickets",
  owner: "also manages keys and closes tickets",
  admin: "operates the whole gateway",
};

function UsersAdmin() {
  const users = useApi<{ data: User[] }>("/admin/users");
  const accounts = useApi<{ data: Account[] }>("/admin/accounts");
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<User | null>(null);
  const [resetting, setResetting] = useState<User | null>(null);
  const [status, setStatus] = useState("");
  const [error, setError] = useState<unknown>(null);
  const { me } = useSession();
  const accountName = (id: string) => accounts.data?.data.find((a) => a.id === id)?.name ?? id;

  async function toggle(user: User) {
    setError(null);
    try {
      await api(`/admin/users/${encodeURIComponent(user.id)}`, {
        method: "PATCH",
        body: { disabled: !user.disabled },
      });
      setStatus(`${user.email} ${user.disabled ? "enabled" : "disabled"}.`);
      users.reload();
    } catch (err) {
      setError(err);
    }
  }

  return (
    <section className="card section" aria-labelledby="users-title">
      <div className="section-head">
        <h2 id="users-title">Users</h2>
        <button type="button" className="btn btn-primary" onClick={() => setCreating(true)}>
          Create user
        </button>
      </div>
      {status && <Status>{status}</Status>}
      <ErrorNotice error={error} />
      {users.error ? (
        <ErrorNotice error={users.error} onRetry={users.reload} />
      ) : !users.data ? (
        <Loading what="Loading the users" />
      ) : users.data.data.length === 0 ? (
        <Empty title="No users yet." />
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Console users</caption>
            <thead>
              <tr>
                <th scope="col">E-mail</th>
                <th scope="col">Role</th>
                <th scope="col">Account</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {users.data.data.map((u) => (
                <tr key={u.id}>
                  <td>{u.email}</td>
                  <td>{u.role}</td>
                  <td>{accountName(u.account_id)}</td>
                  <td>
                    <Badge value={u.disabled ? "disabled" : "active"} />
                  </td>
                  <td className="nowrap">{fmtDate(u.created_at)}</td>
                  <td>
                    <div className="row-actions">
                      <button type="button" className="btn btn-small" onClick={() => setEditing(u)}>
                        Role<span className="sr-only"> of {u.email}</span>
                      </button>
                      <button type="button" className="btn btn-small" onClick={() => setResetting(u)}>
                        Reset password<span className="sr-only"> of {u.email}</span>
                      </button>
                      {u.id !== me.user.id && (
                        <button type="button" className="btn btn-small" onClick={() => void toggle(u)}>
                          {u.disabled ? "Enable" : "Disable"}
                          <span className="sr-only"> {u.email}</span>
                        </button>
                      )}
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Dialog open={creating} title="Create a user" onClose={() => setCreating(false)}>
        {creating && (
          <CreateUserForm
            accounts={accounts.data?.data ?? []}
            onCancel={() => setCreating(false)}
            onSaved={(u) => {
              setCreating(false);
              setStatus(`User ${u.email} created.`);
              users.reload();
            }}
          />
        )}
      </Dialog>
      <Dialog
        open={editing !== null}
        title={`Role of ${editing?.email ?? ""}`}
        onClose={() => setEditing(null)}
      >
        {editing && (
          <RoleForm
            user={editing}
            onCancel={() => setEditing(null)}
            onSaved={(u) => {
              setEditing(null);
              setStatus(`${u.email} is now ${u.role}.`);
              users.reload();
            }}
          />
        )}
      </Dialog>
      <Dialog
        open={resetting !== null}
        title={`Reset the password of ${resetting?.email ?? ""}`}
        onClose={() => setResetting(null)}
        description="Give the new password to the user over a safe channel; they can sign in with it at once."
      >
        {resetting && (
          <PasswordForm
            user={resetting}
            onCancel={() => setResetting(null)}
            onSaved={(u) => {
              setResetting(null);
              setStatus(`Password of ${u.email} reset.`);
            }}
          />
        )}
      </Dialog>
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

function CreateUserForm({
  accounts,
  onCancel,
  onSaved,
}: {
  accounts: Account[];
  onCancel: () => void;
  onSaved: (u: User) => void;
}) {
  const [email, setEmail] = useState("");
  const [accountId, setAccountId] = useState(accounts[0]?.id ?? "");
  const [role, setRole] = useState<Role>("owner");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();
  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { user } = await api<{ user: User }>("/admin/users", {
        method: "POST",
        body: { email: email.trim(), account_id: accountId, role, password },
      });
      onSaved(user);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <form onSubmit={submit}>
      <ErrorNotice error={error} />
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
      <FormActions onCancel={onCancel} disabled={busy}>
        {busy ? "Creating…" : "Create user"}
      </FormActions>
    </form>
  );
}

function RoleForm({
  user,
  onCancel,
  onSaved,
}: {
  user: User;
  onCancel: () => void;
  onSaved: (u: User) => void;
}) {
  const [role, setRole] = useState<Role>(user.role);
  const [error, setError] = useState<unknown>(null);
  const id = useId();
  async function submit(event: FormEvent) {
    event.preventDefault();
    try {
      const { user: saved } = await api<{ user: User }>(`/admin/users/${encodeURIComponent(user.id)}`, {
        method: "PATCH",
        body: { role },
      });
      onSaved(saved);
    } catch (err) {
      setError(err);
    }
  }
  return (
    <form onSubmit={submit}>
      <ErrorNotice error={error} />
      <RoleSelect id={id} value={role} onChange={setRole} />
      <FormActions onCancel={onCancel} disabled={role === user.role}>
        Save role
      </FormActions>
    </form>
  );
}

function PasswordForm({
  user,
  onCancel,
  onSaved,
}: {
  user: User;
  onCancel: () => void;
  onSaved: (u: User) => void;
}) {
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [error, setError] = useState<unknown>(null);
  const id = useId();
  async function submit(event: FormEvent) {
    event.preventDefault();
    if (password !== again) {
      setError(new Error("The two passwords differ."));
      return;
    }
    try {
      await api(`/admin/users/${encodeURIComponent(user.id)}`, { method: "PATCH", body: { password } });
      onSaved(user);
    } catch (err) {
      setError(err);
    }
  }
  return (
    <form onSubmit={submit}>
      <ErrorNotice error={error} />
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
      <FormActions onCancel={onCancel}>Reset password</FormActions>
    </form>
  );
}
