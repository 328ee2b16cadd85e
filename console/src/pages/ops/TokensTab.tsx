import { useId, useState } from "react";
import { ADMIN_TOKENS_PATH, createAdminToken, revokeAdminToken, useAdminList } from "../../admin-api.ts";
import {
  ADMIN_SCOPES,
  type AdminScope,
  type AdminTokenCreated,
  type AdminTokenView,
} from "../../admin-types.ts";
import { Badge } from "../../components/Badge.tsx";
import { ConfirmDialog } from "../../components/ConfirmDialog.tsx";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { Dialog } from "../../components/Dialog.tsx";
import { FormDialog } from "../../components/FormDialog.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty } from "../../components/Notice.tsx";
import { SecretView } from "../../components/SecretView.tsx";
import { fmtDate, fmtDateTime } from "../../format.ts";
import { useSubmit } from "../../submit.ts";

const SCOPE_HINT: Record<AdminScope, string> = {
  read: "reads: the catalog, usage, records, keys, the audit log",
  keys: "also changes keys: their limits, models and budgets",
  catalog: "also changes providers, models and plans",
  full: "everything, admin tokens included",
};

/** Tokens for the admin API (scripts, CI): created here, shown once, revoked here. */
export function TokensTab() {
  const tokens = useAdminList<AdminTokenView>(ADMIN_TOKENS_PATH);
  const dialog = useListDialog<{ form: "create" } | { form: "revoke"; token: AdminTokenView }>(tokens);
  const [created, setCreated] = useState<AdminTokenCreated | null>(null);
  const open = dialog.open;

  return (
    <ListSection
      id="tokens-title"
      title="Admin tokens"
      action={{ label: "Create admin token", onClick: () => dialog.show({ form: "create" }) }}
      intro={
        <p className="muted small">
          For scripts and automation calling the admin API (<code>/admin/v1</code>) with{" "}
          <code>Authorization: Bearer gwadmin-…</code>. The gateway keeps only a hash of each: a token is
          shown once, when it is created.
        </p>
      }
      status={dialog.status}
    >
      <DataTable
        {...listRows(tokens)}
        loading="Loading the admin tokens"
        empty={<Empty title="No admin tokens yet." />}
        caption="Admin tokens"
        rowKey={(t) => t.id}
        rowProps={(t) => ({ "data-token": t.name })}
        columns={[
          {
            header: "Token",
            className: "nowrap",
            cell: (t) => (
              <>
                <span className="cell-main">{t.name}</span>
                <code className="cell-sub">{t.prefix}…</code>
              </>
            ),
          },
          { header: "Scopes", cell: (t) => t.scopes.join(", ") },
          {
            header: "Created by",
            cell: (t) => (
              <span className="cell-clip" title={t.created_by}>
                {t.created_by}
              </span>
            ),
          },
          {
            header: "Created",
            className: "nowrap",
            title: (t) => fmtDateTime(t.created_at),
            cell: (t) => fmtDate(t.created_at),
          },
          {
            header: "Last used",
            className: "nowrap",
            cell: (t) =>
              t.last_used_at === null ? <span className="muted">never</span> : fmtDateTime(t.last_used_at),
          },
          {
            header: "Status",
            className: "nowrap",
            cell: (t) =>
              t.revoked_at === null ? (
                <Badge value="active" />
              ) : (
                <>
                  <Badge value="revoked" />
                  <span className="cell-sub">{fmtDate(t.revoked_at)}</span>
                </>
              ),
          },
          {
            header: "Actions",
            hideHeader: true,
            cell: (t) =>
              t.revoked_at === null && (
                <button
                  type="button"
                  className="btn btn-small btn-danger"
                  onClick={() => dialog.show({ form: "revoke", token: t })}
                >
                  Revoke<span className="sr-only"> {t.name}</span>
                </button>
              ),
          },
        ]}
      />
      {open?.form === "create" && (
        <CreateTokenDialog
          onClose={dialog.close}
          onCreated={(token) => {
            dialog.saved(`Admin token ${token.name} created.`);
            setCreated(token);
          }}
        />
      )}
      {open?.form === "revoke" && (
        <ConfirmDialog
          title={`Revoke ${open.token.name}?`}
          confirm="Revoke token"
          busyLabel="Revoking…"
          keep="Keep the token"
          onCancel={dialog.close}
          action={async () => {
            await revokeAdminToken(open.token);
            dialog.saved(`Admin token ${open.token.name} revoked.`);
          }}
        >
          <p>
            <code>{open.token.prefix}…</code> stops working at once: whatever uses it gets 401 from the admin
            API. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
      <Dialog
        open={created !== null}
        title="Your new admin token"
        onClose={() => setCreated(null)}
        description="Copy it now: this is the only time the gateway shows it. It keeps only a hash."
      >
        {created && (
          <SecretView label="Admin token" secret={created.secret} onDone={() => setCreated(null)}>
            Keep it where your automation keeps secrets, and give each script or pipeline its own, with the
            smallest scopes it needs, so you can revoke one alone.
          </SecretView>
        )}
      </Dialog>
    </ListSection>
  );
}

function CreateTokenDialog({
  onClose,
  onCreated,
}: {
  onClose: () => void;
  onCreated: (token: AdminTokenCreated) => void;
}) {
  const id = useId();
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<AdminScope[]>(["read"]);
  const submit = useSubmit(async () => {
    if (scopes.length === 0) throw new Error("Choose at least one scope.");
    onCreated(await createAdminToken(name.trim(), scopes));
  });
  return (
    <FormDialog
      title="Create an admin token"
      onClose={onClose}
      submit={submit}
      label="Create token"
      busyLabel="Creating…"
    >
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <input
          id={`${id}-name`}
          required
          maxLength={100}
          value={name}
          placeholder="e.g. terraform (production)"
          onChange={(e) => setName(e.target.value)}
        />
        <p className="hint">What will use it.</p>
      </div>
      <fieldset className="fieldset">
        <legend>Scopes</legend>
        {ADMIN_SCOPES.map((scope) => (
          <div className="field field-check" key={scope}>
            <input
              id={`${id}-${scope}`}
              type="checkbox"
              checked={scopes.includes(scope)}
              onChange={(e) =>
                setScopes((s) => (e.target.checked ? [...s, scope] : s.filter((x) => x !== scope)))
              }
            />
            <label htmlFor={`${id}-${scope}`}>
              <strong>{scope}</strong>: {SCOPE_HINT[scope]}
            </label>
          </div>
        ))}
      </fieldset>
    </FormDialog>
  );
}
