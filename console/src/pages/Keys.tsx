import { type FormEvent, useId, useMemo, useState } from "react";
import { api, useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { CopyButton } from "../components/CopyButton.tsx";
import { Dialog } from "../components/Dialog.tsx";
import { FormActions } from "../components/FormActions.tsx";
import { Empty, ErrorNotice, Loading, Status } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtDate, fmtDateTime, fmtInt, utcToday } from "../format.ts";
import { Link } from "../router.tsx";
import { useSession } from "../session.tsx";
import type { Key, Overview } from "../types.ts";

/** "" means no limit; anything else must be a whole number of tokens */
function parseLimit(text: string): number | null | "invalid" {
  const t = text.replaceAll(/[\s,_]/g, "");
  if (t === "") return null;
  if (!/^\d+$/.test(t)) return "invalid";
  return Number(t);
}

interface Usage {
  last30: number;
  todayTokens: number;
  todayCalls: number;
}

export function KeysPage() {
  const { canManage } = useSession();
  const keys = useApi<{ data: Key[] }>("/keys");
  const overview = useApi<Overview>("/overview");
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ key: Key; secret: string } | null>(null);
  const [editing, setEditing] = useState<Key | null>(null);
  const [deleting, setDeleting] = useState<Key | null>(null);
  const [status, setStatus] = useState("");
  const [actionError, setActionError] = useState<unknown>(null);

  const usage = useMemo(() => {
    const map = new Map<string, Usage>();
    const today = utcToday();
    for (const row of overview.data?.daily ?? []) {
      const u = map.get(row.key_id) ?? { last30: 0, todayTokens: 0, todayCalls: 0 };
      u.last30 += Number(row.tokens);
      if (row.day === today) {
        u.todayTokens += Number(row.tokens);
        u.todayCalls += Number(row.calls);
      }
      map.set(row.key_id, u);
    }
    return map;
  }, [overview.data]);

  function changed(message: string) {
    setStatus(message);
    setActionError(null);
    keys.reload();
  }

  async function toggle(key: Key) {
    setActionError(null);
    try {
      await api(`/keys/${encodeURIComponent(key.id)}`, {
        method: "PATCH",
        body: { disabled: !key.disabled },
      });
      changed(`Key ${key.prefix}… ${key.disabled ? "enabled" : "disabled"}.`);
    } catch (err) {
      setActionError(err);
    }
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
      <ErrorNotice error={actionError} />
      {keys.error ? (
        <ErrorNotice error={keys.error} onRetry={keys.reload} />
      ) : !keys.data ? (
        <Loading what="Loading the keys" />
      ) : keys.data.data.length === 0 ? (
        <Empty title="No keys yet.">
          {canManage
            ? "Create a key to start calling the API."
            : "Ask an owner of the account to create one."}
        </Empty>
      ) : (
        <div className="table-wrap card">
          <table>
            <caption className="sr-only">API keys of the account and what each consumed</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Status</th>
                <th scope="col" className="num">
                  Used
                </th>
                <th scope="col" className="num">
                  Limit
                </th>
                <th scope="col" className="num">
                  30 days
                </th>
                <th scope="col" className="num">
                  Today
                </th>
                <th scope="col">Created</th>
                {canManage && (
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((key) => {
                const u = usage.get(key.id);
                return (
                  <tr key={key.id}>
                    <td className="nowrap">
                      {key.name ? (
                        <span className="cell-main">{key.name}</span>
                      ) : (
                        <span className="muted">unnamed</span>
                      )}
                      <code className="cell-sub">{key.prefix}…</code>
                    </td>
                    <td>
                      <Badge value={key.disabled ? "disabled" : "enabled"} />
                    </td>
                    <td className="num">{fmtInt(key.used_tokens)}</td>
                    <td className="num">
                      {key.limit_tokens === null ? (
                        <span className="muted">none</span>
                      ) : (
                        fmtInt(key.limit_tokens)
                      )}
                    </td>
                    <td className="num">{fmtInt(u?.last30 ?? 0)}</td>
                    <td className="num">
                      {fmtInt(u?.todayTokens ?? 0)}
                      <span className="cell-sub">
                        {fmtInt(u?.todayCalls ?? 0)} {u?.todayCalls === 1 ? "call" : "calls"}
                      </span>
                    </td>
                    <td className="nowrap" title={fmtDateTime(key.created_at)}>
                      {fmtDate(key.created_at)}
                    </td>
                    {canManage && (
                      <td>
                        <div className="row-actions">
                          <button type="button" className="btn btn-small" onClick={() => setEditing(key)}>
                            Edit<span className="sr-only"> {key.prefix}</span>
                          </button>
                          <button type="button" className="btn btn-small" onClick={() => void toggle(key)}>
                            {key.disabled ? "Enable" : "Disable"}
                            <span className="sr-only"> {key.prefix}</span>
                          </button>
                          <button
                            type="button"
                            className="btn btn-small btn-danger"
                            onClick={() => setDeleting(key)}
                          >
                            Delete<span className="sr-only"> {key.prefix}</span>
                          </button>
                        </div>
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <p className="muted small">
        Used: all time. 30 days and Today count UTC days, today included. Per-call detail is in{" "}
        <Link to="/records">Call records</Link>.
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
        {created && <SecretView secret={created.secret} onDone={() => setCreated(null)} />}
      </Dialog>
      <EditKeyDialog
        keyToEdit={editing}
        onClose={() => setEditing(null)}
        onSaved={(key) => {
          setEditing(null);
          changed(`Key ${key.prefix}… saved.`);
        }}
      />
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

function SecretView({ secret, onDone }: { secret: string; onDone: () => void }) {
  const id = useId();
  return (
    <>
      <div className="field">
        <label htmlFor={id}>API key</label>
        <div className="input-row">
          <input id={id} className="mono" readOnly value={secret} onFocus={(e) => e.target.select()} />
          <CopyButton text={secret} fieldId={id} />
        </div>
      </div>
      <p className="notice notice-info">
        Use one key per application: give each app, service or environment its own key, so its consumption
        shows separately and you can disable it alone.
      </p>
      <div className="dialog-actions">
        <button type="button" className="btn btn-primary" onClick={onDone}>
          I have copied it
        </button>
      </div>
    </>
  );
}

function KeyFields({
  name,
  setName,
  limit,
  setLimit,
}: {
  name: string;
  setName: (v: string) => void;
  limit: string;
  setLimit: (v: string) => void;
}) {
  const nameId = useId();
  const limitId = useId();
  return (
    <>
      <div className="field">
        <label htmlFor={nameId}>Name</label>
        <input
          id={nameId}
          value={name}
          maxLength={100}
          placeholder="e.g. billing-service (production)"
          onChange={(e) => setName(e.target.value)}
        />
        <p className="hint">The application that will use it.</p>
      </div>
      <div className="field">
        <label htmlFor={limitId}>Token limit</label>
        <input
          id={limitId}
          inputMode="numeric"
          value={limit}
          placeholder="no limit"
          aria-describedby={`${limitId}-hint`}
          onChange={(e) => setLimit(e.target.value)}
        />
        <p className="hint" id={`${limitId}-hint`}>
          Total tokens this key may consume; empty for no limit of its own (the account's quota still
          applies).
        </p>
      </div>
    </>
  );
}

function CreateKeyDialog({
  open,
  onClose,
  onCreated,
}: {
  open: boolean;
  onClose: () => void;
  onCreated: (result: { key: Key; secret: string }) => void;
}) {
  const [name, setName] = useState("");
  const [limit, setLimit] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const limitTokens = parseLimit(limit);
    if (limitTokens === "invalid") {
      setError(new Error("The token limit must be a whole number, or empty for no limit."));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const body: { name?: string; limit_tokens?: number } = {};
      if (name.trim()) body.name = name.trim();
      if (limitTokens !== null) body.limit_tokens = limitTokens;
      const result = await api<{ key: Key; secret: string }>("/keys", { method: "POST", body });
      setName("");
      setLimit("");
      onCreated(result);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Dialog
      open={open}
      title="Create a key"
      onClose={onClose}
      description="Use one key per application: one for each app or service that calls the API."
    >
      <form onSubmit={submit}>
        <ErrorNotice error={error} />
        <KeyFields name={name} setName={setName} limit={limit} setLimit={setLimit} />
        <FormActions onCancel={onClose} disabled={busy}>
          {busy ? "Creating…" : "Create key"}
        </FormActions>
      </form>
    </Dialog>
  );
}

function EditKeyDialog({
  keyToEdit,
  onClose,
  onSaved,
}: {
  keyToEdit: Key | null;
  onClose: () => void;
  onSaved: (key: Key) => void;
}) {
  return (
    <Dialog open={keyToEdit !== null} title={`Edit key ${keyToEdit?.prefix ?? ""}…`} onClose={onClose}>
      {keyToEdit && (
        <EditKeyForm key={keyToEdit.id} keyToEdit={keyToEdit} onClose={onClose} onSaved={onSaved} />
      )}
    </Dialog>
  );
}

function EditKeyForm({
  keyToEdit,
  onClose,
  onSaved,
}: {
  keyToEdit: Key;
  onClose: () => void;
  onSaved: (key: Key) => void;
}) {
  const [name, setName] = useState(keyToEdit.name ?? "");
  const [limit, setLimit] = useState(keyToEdit.limit_tokens === null ? "" : String(keyToEdit.limit_tokens));
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const limitTokens = parseLimit(limit);
    if (limitTokens === "invalid") {
      setError(new Error("The token limit must be a whole number, or empty for no limit."));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const { key } = await api<{ key: Key }>(`/keys/${encodeURIComponent(keyToEdit.id)}`, {
        method: "PATCH",
        body: { name: name.trim() || null, limit_tokens: limitTokens },
      });
      onSaved(key);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }

  return (
    <form onSubmit={submit}>
      <ErrorNotice error={error} />
      <KeyFields name={name} setName={setName} limit={limit} setLimit={setLimit} />
      <p className="muted small">Used so far: {fmtInt(keyToEdit.used_tokens)} tokens.</p>
      <FormActions onCancel={onClose} disabled={busy}>
        {busy ? "Saving…" : "Save"}
      </FormActions>
    </form>
  );
}

function DeleteKey({
  keyToDelete,
  onCancel,
  onDeleted,
}: {
  keyToDelete: Key;
  onCancel: () => void;
  onDeleted: () => void;
}) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function confirm() {
    setBusy(true);
    try {
      await api(`/keys/${encodeURIComponent(keyToDelete.id)}`, { method: "DELETE" });
      onDeleted();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <>
      <ErrorNotice error={error} />
      <p>
        <code>{keyToDelete.prefix}…</code> {keyToDelete.name && <strong>{keyToDelete.name}</strong>} stops
        working at once: every application using it gets "invalid API key". Its call records and consumption
        stay. This cannot be undone.
      </p>
      <div className="dialog-actions">
        <button type="button" className="btn" onClick={onCancel} data-autofocus>
          Keep the key
        </button>
        <button type="button" className="btn btn-danger" onClick={() => void confirm()} disabled={busy}>
          {busy ? "Deleting…" : "Delete key"}
        </button>
      </div>
    </>
  );
}
