import { useId, useState } from "react";
import { testProvider, updateEntry, useAdminList } from "../../admin-api.ts";
import {
  type ModelEntry,
  PROVIDER_TYPES,
  type ProviderEntry,
  type ProviderTestResult,
  type ProviderType,
} from "../../admin-types.ts";
import { deploymentsOf } from "../../catalog-edit.ts";
import { Badge } from "../../components/Badge.tsx";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { Dialog } from "../../components/Dialog.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty, ErrorNotice } from "../../components/Notice.tsx";
import { fmtInt, fmtMs } from "../../format.ts";
import { Link } from "../../router.tsx";
import { useSubmit } from "../../submit.ts";
import {
  CatalogNotice,
  DeleteEntryDialog,
  EntryDialog,
  type EntryForm,
  useCatalogSource,
} from "./catalog.tsx";
import { FieldBox, ListInput, TextInput } from "./fields.tsx";

/** Where a provider's upstream keys come from, counted: each variable, each literal key. */
export function keySources(p: ProviderEntry): string {
  const parts: string[] = [];
  if (p.api_key_env) parts.push(`$${p.api_key_env}`);
  for (const name of p.api_keys_env ?? []) parts.push(`$${name}`);
  const literal = p.api_keys?.length ?? 0;
  if (literal > 0) parts.push(`${literal} stored ${literal === 1 ? "key" : "keys"}`);
  return parts.length > 0 ? parts.join(", ") : "none";
}

/** The models with a deployment on the provider. */
export function modelsOn(providerId: string, models: readonly ModelEntry[]): ModelEntry[] {
  return models.filter((m) => deploymentsOf(m).some((d) => d.provider === providerId));
}

export function ProvidersTab() {
  const source = useCatalogSource();
  const providers = useAdminList<ProviderEntry>("/providers");
  const models = useAdminList<ModelEntry>("/models");
  const dialog = useListDialog<
    { form: "add" } | { form: "edit" | "delete" | "test"; provider: ProviderEntry }
  >(providers);
  const open = dialog.open;
  const modelList = models.data?.data ?? [];
  const toggle = useSubmit(async (p: ProviderEntry) => {
    await updateEntry("providers", p.id, { disabled: !p.disabled });
    dialog.saved(`Provider ${p.id} ${p.disabled ? "enabled" : "disabled"}.`);
  });
  const locked = !source.editable;

  return (
    <ListSection
      id="providers-title"
      title="Providers"
      action={locked ? undefined : { label: "Add provider", onClick: () => dialog.show({ form: "add" }) }}
      intro={
        <>
          <CatalogNotice source={source} />
          <p className="muted small">
            The upstreams the gateway forwards to. Test one with a call of one token; open one to see its
            upstream keys.
          </p>
        </>
      }
      status={dialog.status}
    >
      <ErrorNotice error={toggle.error} />
      <DataTable
        {...listRows(providers)}
        loading="Loading the providers"
        empty={<Empty title="No providers." />}
        caption="Providers"
        rowKey={(p) => p.id}
        rowProps={(p) => ({ "data-provider": p.id })}
        columns={[
          {
            header: "Provider",
            rowHeader: true,
            cell: (p) => <Link to={`/operations/providers/${encodeURIComponent(p.id)}`}>{p.id}</Link>,
          },
          { header: "Type", className: "nowrap", cell: (p) => p.type },
          {
            header: "Base URL",
            cell: (p) =>
              p.base_url ? (
                <code className="cell-clip" title={p.base_url}>
                  {p.base_url}
                </code>
              ) : (
                <span className="muted">{p.type === "demo" ? "none" : "the type's default"}</span>
              ),
          },
          { header: "Upstream keys", cell: (p) => keySources(p) },
          { header: "Models", num: true, cell: (p) => fmtInt(modelsOn(p.id, modelList).length) },
          { header: "Status", cell: (p) => <Badge value={p.disabled ? "disabled" : "enabled"} /> },
          {
            header: "Actions",
            hideHeader: true,
            cell: (p) => (
              <div className="row-actions">
                <button
                  type="button"
                  className="btn btn-small"
                  onClick={() => dialog.show({ form: "test", provider: p })}
                >
                  Test<span className="sr-only"> {p.id}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={locked}
                  onClick={() => dialog.show({ form: "edit", provider: p })}
                >
                  Edit<span className="sr-only"> {p.id}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={locked || toggle.busy}
                  onClick={() => toggle.run(p)}
                >
                  {p.disabled ? "Enable" : "Disable"}
                  <span className="sr-only"> {p.id}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small btn-danger"
                  disabled={locked}
                  onClick={() => dialog.show({ form: "delete", provider: p })}
                >
                  Delete<span className="sr-only"> {p.id}</span>
                </button>
              </div>
            ),
          },
        ]}
      />
      {open?.form === "add" && (
        <ProviderDialog onClose={dialog.close} onSaved={(p) => dialog.saved(`Provider ${p.id} added.`)} />
      )}
      {open?.form === "edit" && (
        <ProviderDialog
          provider={open.provider}
          onClose={dialog.close}
          onSaved={(p, changed) => dialog.saved(changed ? `Provider ${p.id} saved.` : "Nothing changed.")}
        />
      )}
      {open?.form === "delete" && (
        <DeleteEntryDialog
          kind="providers"
          id={open.provider.id}
          onCancel={dialog.close}
          onDeleted={() => dialog.saved(`Provider ${open.provider.id} deleted.`)}
        />
      )}
      <Dialog
        open={open?.form === "test"}
        title={open?.form === "test" ? `Test ${open.provider.id}` : "Test"}
        onClose={dialog.close}
        wide
      >
        {open?.form === "test" && <ProviderTest provider={open.provider} models={modelList} />}
      </Dialog>
    </ListSection>
  );
}

export function ProviderDialog({
  provider,
  onClose,
  onSaved,
}: {
  provider?: ProviderEntry;
  onClose: () => void;
  onSaved: (p: ProviderEntry, changed: boolean) => void;
}) {
  return (
    <EntryDialog<ProviderEntry>
      kind="providers"
      original={provider}
      initial={{ id: "", type: "openai-compatible" }}
      onClose={onClose}
      onSaved={onSaved}
    >
      {(form) => <ProviderFields {...form} />}
    </EntryDialog>
  );
}

const BASE_URL_HINT: Record<ProviderType, string> = {
  "openai-compatible": "With its /v1, e.g. https://api.openai.com/v1 or http://127.0.0.1:9000/v1.",
  anthropic: "Empty: https://api.anthropic.com.",
  gemini: "Empty: https://generativelanguage.googleapis.com.",
  "azure-openai": "The resource's endpoint, e.g. https://my-resource.openai.azure.com.",
  demo: "",
};

function ProviderFields({ entry, set, invalid, creating }: EntryForm<ProviderEntry>) {
  const id = useId();
  const type = entry.type;
  return (
    <>
      <div className="form-grid">
        {creating && (
          <FieldBox id={`${id}-id`} label="Id" hint="What models' provider names." invalid={invalid === "id"}>
            {(field) => (
              <TextInput {...field} required value={entry.id} onChange={(v) => set(["id"], v ?? "")} />
            )}
          </FieldBox>
        )}
        <FieldBox id={`${id}-type`} label="Type" invalid={invalid === "type"}>
          {(field) => (
            <select {...field} value={type} onChange={(e) => set(["type"], e.target.value)}>
              {PROVIDER_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </FieldBox>
      </div>
      {type !== "demo" && (
        <>
          <FieldBox
            id={`${id}-url`}
            label="Base URL"
            hint={BASE_URL_HINT[type] ?? ""}
            invalid={invalid === "base_url"}
          >
            {(field) => (
              <TextInput {...field} value={entry.base_url} onChange={(v) => set(["base_url"], v)} />
            )}
          </FieldBox>
          <FieldBox
            id={`${id}-keys`}
            label="Upstream keys"
            hint="The keys themselves, one a line, kept encrypted; calls share them, and a key that fails cools down while the others answer. They show masked (…abcd): leave the list as it is to keep them, or replace it whole."
            invalid={invalid === "api_keys"}
          >
            {(field) => (
              <ListInput {...field} value={entry.api_keys} onChange={(v) => set(["api_keys"], v)} />
            )}
          </FieldBox>
          <div className="form-grid">
            <FieldBox
              id={`${id}-env`}
              label="Key from the environment variable"
              hint="Its name, e.g. OPENAI_API_KEY."
              invalid={invalid === "api_key_env"}
            >
              {(field) => (
                <TextInput {...field} value={entry.api_key_env} onChange={(v) => set(["api_key_env"], v)} />
              )}
            </FieldBox>
            <FieldBox
              id={`${id}-envs`}
              label="Keys from the environment variables"
              hint="Names, one a line."
              invalid={invalid === "api_keys_env"}
            >
              {(field) => (
                <ListInput
                  {...field}
                  rows={2}
                  value={entry.api_keys_env}
                  onChange={(v) => set(["api_keys_env"], v)}
                />
              )}
            </FieldBox>
          </div>
        </>
      )}
      <div className="field field-check">
        <input
          id={`${id}-disabled`}
          type="checkbox"
          checked={entry.disabled === true}
          onChange={(e) => set(["disabled"], e.target.checked)}
        />
        <label htmlFor={`${id}-disabled`}>Disabled: no call is sent to it</label>
      </div>
      <p className="muted small">Headers, timeouts and the type's other fields: in the JSON tab.</p>
    </>
  );
}

/** One call of one token through the provider: its latency, or what the upstream answered. */
export function ProviderTest({
  provider,
  models,
}: {
  provider: ProviderEntry;
  models: readonly ModelEntry[];
}) {
  const id = useId();
  const [model, setModel] = useState("");
  const [result, setResult] = useState<ProviderTestResult | null>(null);
  const suggestions = [
    ...new Set(
      modelsOn(provider.id, models).flatMap((m) =>
        deploymentsOf(m)
          .filter((d) => d.provider === provider.id)
          .map((d) => d.upstream_model ?? m.id),
      ),
    ),
  ];
  const run = useSubmit(async () => {
    setResult(null);
    setResult(await testProvider(provider.id, model.trim() || undefined));
  });
  return (
    <div className="provider-test">
      <form className="inline-form" onSubmit={run.onSubmit} aria-label={`Test ${provider.id}`}>
        <div className="field">
          <label htmlFor={`${id}-model`}>Upstream model</label>
          <input
            id={`${id}-model`}
            list={`${id}-models`}
            value={model}
            placeholder={suggestions[0] ?? "the gateway's choice"}
            aria-describedby={`${id}-hint`}
            onChange={(e) => setModel(e.target.value)}
          />
          <datalist id={`${id}-models`}>
            {suggestions.map((s) => (
              <option key={s} value={s} />
            ))}
          </datalist>
        </div>
        <button type="submit" className="btn btn-primary" disabled={run.busy}>
          {run.busy ? "Testing…" : "Run test"}
        </button>
      </form>
      <p className="hint" id={`${id}-hint`}>
        The name the upstream knows; empty lets the gateway choose one routed here. The call asks for one
        token.
      </p>
      <ErrorNotice error={run.error} />
      {result && <TestResult result={result} />}
    </div>
  );
}

function TestResult({ result }: { result: ProviderTestResult }) {
  return (
    <div
      className={result.ok ? "notice notice-good" : "notice notice-error"}
      role="status"
      data-testid="test-result"
    >
      {result.ok ? (
        <p>
          <strong>OK</strong>: <code>{result.model}</code> answered in{" "}
          <strong>{fmtMs(result.latency_ms)}</strong>.
        </p>
      ) : (
        <p>
          <strong>Failed</strong> after {fmtMs(result.latency_ms)} (<code>{result.model}</code>):{" "}
          {result.status === null ? "no answer from the upstream" : `HTTP ${result.status}`}
          {result.error && (
            <>
              : <span className="prewrap">{result.error}</span>
            </>
          )}
        </p>
      )}
    </div>
  );
}
