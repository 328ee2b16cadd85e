import {
  type ProviderKeysAnswer,
  providerKeysPath,
  updateEntry,
  useAdminApi,
  useAdminList,
} from "../../admin-api.ts";
import type { ModelEntry, ProviderEntry } from "../../admin-types.ts";
import { Badge } from "../../components/Badge.tsx";
import { DataTable } from "../../components/DataTable.tsx";
import { useListDialog } from "../../components/ListSection.tsx";
import { Empty, ErrorNotice, Loading, Status } from "../../components/Notice.tsx";
import { fmtDateTime, fmtInt } from "../../format.ts";
import { Link } from "../../router.tsx";
import { useSubmit } from "../../submit.ts";
import { CatalogNotice, useCatalogSource } from "./catalog.tsx";
import { keySources, modelsOn, ProviderDialog, ProviderTest } from "./ProvidersTab.tsx";

/** One provider: what it is, a test call, and the state of each of its upstream keys. */
export function ProviderPage({ id }: { id: string }) {
  const source = useCatalogSource();
  const provider = useAdminApi<ProviderEntry>(`/providers/${encodeURIComponent(id)}`);
  const keys = useAdminApi<ProviderKeysAnswer>(providerKeysPath(id));
  const models = useAdminList<ModelEntry>("/models");
  const dialog = useListDialog<"edit">(provider);
  const toggle = useSubmit(async (p: ProviderEntry) => {
    await updateEntry("providers", p.id, { disabled: !p.disabled });
    dialog.saved(`Provider ${p.id} ${p.disabled ? "enabled" : "disabled"}.`);
  });
  const p = provider.data;
  const locked = !source.editable;
  const routed = p ? modelsOn(p.id, models.data?.data ?? []) : [];

  return (
    <>
      <p className="small">
        <Link to="/operations/providers">← All providers</Link>
      </p>
      <CatalogNotice source={source} />
      {provider.error ? (
        <ErrorNotice error={provider.error} onRetry={provider.reload} />
      ) : !p ? (
        <Loading what="Loading the provider" />
      ) : (
        <>
          <section className="card section" aria-labelledby="provider-title">
            <div className="section-head">
              <h2 id="provider-title">
                Provider {p.id} <Badge value={p.disabled ? "disabled" : "enabled"} />
              </h2>
              <div className="row-actions">
                <button type="button" className="btn" disabled={locked} onClick={() => dialog.show("edit")}>
                  Edit
                </button>
                <button
                  type="button"
                  className="btn"
                  disabled={locked || toggle.busy}
                  onClick={() => toggle.run(p)}
                >
                  {p.disabled ? "Enable" : "Disable"}
                </button>
              </div>
            </div>
            {dialog.status && <Status>{dialog.status}</Status>}
            <ErrorNotice error={toggle.error} />
            <dl className="details">
              <div>
                <dt>Type</dt>
                <dd>{p.type}</dd>
              </div>
              <div>
                <dt>Base URL</dt>
                <dd>{p.base_url ? <code>{p.base_url}</code> : "the type's default"}</dd>
              </div>
              <div>
                <dt>Upstream keys</dt>
                <dd>{keySources(p)}</dd>
              </div>
              <div>
                <dt>Models routed here</dt>
                <dd>{routed.length > 0 ? routed.map((m) => m.id).join(", ") : "none"}</dd>
              </div>
            </dl>
            <details>
              <summary className="small">The whole entry (JSON)</summary>
              <pre className="code-block">{JSON.stringify(p, null, 2)}</pre>
            </details>
          </section>
          <section className="card section" aria-labelledby="provider-test-title">
            <h2 id="provider-test-title">Test</h2>
            <ProviderTest provider={p} models={models.data?.data ?? []} />
          </section>
          {dialog.open === "edit" && (
            <ProviderDialog
              provider={p}
              onClose={dialog.close}
              onSaved={(saved, changed) =>
                dialog.saved(changed ? `Provider ${saved.id} saved.` : "Nothing changed.")
              }
            />
          )}
        </>
      )}
      <section className="card section" aria-labelledby="provider-keys-title">
        <div className="section-head">
          <h2 id="provider-keys-title">Upstream keys</h2>
          <button type="button" className="btn btn-small" onClick={keys.reload} disabled={keys.loading}>
            {keys.loading ? "Refreshing…" : "Refresh"}
          </button>
        </div>
        <p className="muted small">
          The pool's keys as this instance uses them: calls share the ready ones; a key that fails cools down
          until the time shown, while the others answer.
        </p>
        <DataTable
          rows={keys.data?.data}
          error={keys.error}
          onRetry={keys.reload}
          loading="Loading the upstream keys"
          empty={
            <Empty title="No upstream keys.">
              The provider has no key of its own (or its type needs none).
            </Empty>
          }
          caption="The provider's upstream keys and their state"
          rowKey={(k) => String(k.index)}
          columns={[
            { header: "Index", num: true, cell: (k) => k.index },
            { header: "Key", cell: (k) => <code>{k.hint}</code> },
            {
              header: "State",
              className: "nowrap",
              cell: (k) => (
                <>
                  <Badge value={k.state} />
                  {k.cooling_until !== null && (
                    <span className="cell-sub">until {fmtDateTime(k.cooling_until)}</span>
                  )}
                </>
              ),
            },
            { header: "Calls", num: true, cell: (k) => fmtInt(k.calls) },
            { header: "Failures", num: true, cell: (k) => fmtInt(k.failures) },
            {
              header: "Last error",
              cell: (k) => (k.last_error ? <span className="prewrap small">{k.last_error}</span> : "–"),
            },
          ]}
        />
      </section>
    </>
  );
}
