import { useId, useState } from "react";
import { api, useApi } from "../../api.ts";
import { Badge } from "../../components/Badge.tsx";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { FormDialog } from "../../components/FormDialog.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty, ErrorNotice } from "../../components/Notice.tsx";
import { fmtDate } from "../../format.ts";
import { useSession } from "../../session.tsx";
import { useSubmit } from "../../submit.ts";
import {
  type AccountView,
  type List,
  ROLES,
  type Role,
  type UserAnswer,
  type UserView,
} from "../../types.ts";

const ROLE_HINT: Record<Role, string> = {
  member: "reads the account, opens tickets",
  owner: "also manages keys and closes tickets",
  admin: "operates the whole gateway",
};

export function UsersTab() {
  const users = useApi<List<UserView>>("/admin/users");
  const accounts = useApi<List<AccountView>>("/admin/accounts");
  const dialog = useListDialog<{ form: "create" } | { form: "role" | "password"; user: UserView }>(users);
  const open = dialog.open;
  const { me } = useSession();
  const accountName = (id: string) => accounts.data?.data.find((a) => a.id === id)?.name ?? id;
  const toggle = useSubmit(async (user: UserView) => {
    await api(`/admin/users/${encodeURIComponent(user.id)}`, {
      method: "PATCH",
      body: { disabled: !user.disabled },
    });
    dialog.saved(`${user.email} ${user.disabled ? "enabled" : "disabled"}.`);
  });

  return (
    <ListSection
      id="users-title"
      title="Users"
      action={{ label: "Create user", onClick: () => dialog.show({ form: "create" }) }}
      status={dialog.status}
    >
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
                  onClick={() => dialog.show({ form: "role", user: u })}
                >
                  Role<span className="sr-only"> of {u.email}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() => dialog.show({ form: "password", user: u })}
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
          onClose={dialog.close}
          onSaved={(u) => dialog.saved(`User ${u.email} created.`)}
        />
      )}
      {open?.form === "role" && (
        <RoleDialog
          user={open.user}
          onClose={dialog.close}
          onSaved={(u) => dialog.saved(`${u.email} is now ${u.role}.`)}
        />
      )}
      {open?.form === "password" && (
        <PasswordDialog
          user={open.user}
          onClose={dialog.close}
          onSaved={(u) => dialog.saved(`Password of ${u.email} reset.`)}
        />
      )}
    </ListSection>
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
