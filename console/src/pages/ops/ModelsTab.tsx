import { useId, useState } from "react";
import { useAdminList } from "../../admin-api.ts";
import {
  type Deployment,
  type ModelEntry,
  type PlanEntry,
  type ProviderEntry,
  ROUTINGS,
} from "../../admin-types.ts";
import { deploymentsOf, plansIncluding, withDeployments } from "../../catalog-edit.ts";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty } from "../../components/Notice.tsx";
import { fmtInt, fmtPrice } from "../../format.ts";
import {
  CatalogNotice,
  DeleteEntryDialog,
  EntryDialog,
  type EntryForm,
  useCatalogSource,
} from "./catalog.tsx";
import { FieldBox, ListInput, NumberInput, RefusalNote, TextInput } from "./fields.tsx";

export function ModelsTab() {
  const source = useCatalogSource();
  const models = useAdminList<ModelEntry>("/models");
  const plans = useAdminList<PlanEntry>("/plans");
  const providers = useAdminList<ProviderEntry>("/providers");
  const dialog = useListDialog<{ form: "add" } | { form: "edit" | "delete"; model: ModelEntry }>(models);
  const open = dialog.open;
  const planList = plans.data?.data ?? [];
  const providerIds = (providers.data?.data ?? []).map((p) => p.id);
  const locked = !source.editable;

  return (
    <ListSection
      id="models-title"
      title="Models"
      action={locked ? undefined : { label: "Add model", onClick: () => dialog.show({ form: "add" }) }}
      intro={
        <>
          <CatalogNotice source={source} />
          <p className="muted small">
            The public models clients call: where each is deployed, what it costs (USD per million tokens),
            what answers when it fails, and which plans include it.
          </p>
        </>
      }
      status={dialog.status}
    >
      <DataTable
        {...listRows(models)}
        loading="Loading the models"
        empty={<Empty title="No models." />}
        caption="Models"
        rowKey={(m) => m.id}
        rowProps={(m) => ({ "data-model": m.id })}
        columns={[
          {
            header: "Model",
            rowHeader: true,
            cell: (m) => (
              <>
                {m.id}
                {m.owned_by && <span className="cell-sub">{m.owned_by}</span>}
              </>
            ),
          },
          {
            header: "Deployments",
            cell: (m) => (
              <ul className="plain-list">
                {deploymentsOf(m).map((d, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: a model may deploy twice on one provider
                  <li key={i}>
                    <code>{d.provider}</code>
                    {d.upstream_model && d.upstream_model !== m.id && <> / {d.upstream_model}</>}
                    {d.weight !== undefined && <span className="muted"> ×{d.weight}</span>}
                  </li>
                ))}
              </ul>
            ),
          },
          { header: "Routing", cell: (m) => m.routing ?? <span className="muted">weighted</span> },
          {
            header: "Fallbacks",
            cell: (m) => (m.fallbacks?.length ? m.fallbacks.join(", ") : <span className="muted">none</span>),
          },
          {
            header: "Prices",
            num: true,
            cell: (m) =>
              m.pricing ? (
                <>
                  {fmtPrice(m.pricing.input)} in · {fmtPrice(m.pricing.output)} out
                  {(m.pricing.cached_input !== undefined || m.pricing.cache_write !== undefined) && (
                    <span className="cell-sub">
                      cache {fmtPrice(m.pricing.cached_input)} read · {fmtPrice(m.pricing.cache_write)} write
                    </span>
                  )}
                </>
              ) : (
                <span className="muted" title="The price table's, if it knows the upstream model">
                  price table
                </span>
              ),
          },
          {
            header: "Max output",
            num: true,
            cell: (m) =>
              m.max_output_tokens === undefined ? (
                <span className="muted">4,096</span>
              ) : (
                fmtInt(m.max_output_tokens)
              ),
          },
          {
            header: "Plans",
            cell: (m) => {
              const included = plansIncluding(m.id, planList);
              return included.length > 0 ? included.join(", ") : <span className="muted">none</span>;
            },
          },
          {
            header: "Actions",
            hideHeader: true,
            cell: (m) => (
              <div className="row-actions">
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={locked}
                  onClick={() => dialog.show({ form: "edit", model: m })}
                >
                  Edit<span className="sr-only"> {m.id}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small btn-danger"
                  disabled={locked}
                  onClick={() => dialog.show({ form: "delete", model: m })}
                >
                  Delete<span className="sr-only"> {m.id}</span>
                </button>
              </div>
            ),
          },
        ]}
      />
      {(open?.form === "add" || open?.form === "edit") && (
        <EntryDialog<ModelEntry>
          kind="models"
          original={open.form === "edit" ? open.model : undefined}
          initial={{ id: "", provider: providerIds[0] ?? "" }}
          onClose={dialog.close}
          onSaved={(m, changed) =>
            dialog.saved(
              open.form === "add"
                ? `Model ${m.id} added.`
                : changed
                  ? `Model ${m.id} saved.`
                  : "Nothing changed.",
            )
          }
        >
          {(form) => <ModelFields {...form} providers={providerIds} />}
        </EntryDialog>
      )}
      {open?.form === "delete" && (
        <DeleteEntryDialog
          kind="models"
          id={open.model.id}
          onCancel={dialog.close}
          onDeleted={() => dialog.saved(`Model ${open.model.id} deleted.`)}
        />
      )}
    </ListSection>
  );
}

const PRICES = [
  ["input", "Input"],
  ["output", "Output"],
  ["cached_input", "Cache reads"],
  ["cache_write", "Cache writes"],
] as const;

function ModelFields({
  entry,
  set,
  update,
  invalid,
  creating,
  providers,
}: EntryForm<ModelEntry> & { providers: string[] }) {
  const id = useId();
  return (
    <>
      {creating && (
        <FieldBox id={`${id}-id`} label="Id" hint="The public name clients send." invalid={invalid === "id"}>
          {(field) => (
            <TextInput {...field} required value={entry.id} onChange={(v) => set(["id"], v ?? "")} />
          )}
        </FieldBox>
      )}
      <DeploymentRows
        initial={deploymentsOf(entry)}
        providers={providers}
        modelId={entry.id}
        invalid={invalid === "deployments" || invalid === "provider" || invalid === "upstream_model"}
        onChange={(rows) => update((e) => withDeployments(e, rows))}
      />
      <div className="form-grid">
        <FieldBox
          id={`${id}-routing`}
          label="Routing"
          hint="How the deployments share the calls."
          invalid={invalid === "routing"}
        >
          {(field) => (
            <select
              {...field}
              value={entry.routing ?? ""}
              onChange={(e) => set(["routing"], e.target.value || undefined)}
            >
              <option value="">weighted (the default)</option>
              {ROUTINGS.filter((r) => r !== "weighted").map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
              {entry.routing === "weighted" && <option value="weighted">weighted</option>}
            </select>
          )}
        </FieldBox>
        <FieldBox
          id={`${id}-fallbacks`}
          label="Fallbacks"
          hint="Public models tried in order when every deployment failed, one a line."
          invalid={invalid === "fallbacks"}
        >
          {(field) => (
            <ListInput {...field} rows={2} value={entry.fallbacks} onChange={(v) => set(["fallbacks"], v)} />
          )}
        </FieldBox>
      </div>
      <fieldset className="fieldset">
        <legend>Prices, USD per million tokens</legend>
        <p className="hint">Empty: the price table's, if it knows the upstream model.</p>
        <div className="form-grid form-grid-narrow">
          {PRICES.map(([field, label]) => (
            <FieldBox key={field} id={`${id}-price-${field}`} label={label} invalid={invalid === "pricing"}>
              {(props) => (
                <NumberInput
                  {...props}
                  value={entry.pricing?.[field]}
                  onChange={(v) => set(["pricing", field], v)}
                />
              )}
            </FieldBox>
          ))}
        </div>
      </fieldset>
      <div className="form-grid">
        <FieldBox
          id={`${id}-max`}
          label="Max output tokens"
          hint="Reserved when a request gives no max_tokens (4,096 if empty)."
          invalid={invalid === "max_output_tokens"}
        >
          {(field) => (
            <NumberInput
              {...field}
              integer
              value={entry.max_output_tokens}
              onChange={(v) => set(["max_output_tokens"], v)}
            />
          )}
        </FieldBox>
        <FieldBox
          id={`${id}-owner`}
          label="Owned by"
          hint="What GET /v1/models shows; empty: the provider's id."
          invalid={invalid === "owned_by"}
        >
          {(field) => <TextInput {...field} value={entry.owned_by} onChange={(v) => set(["owned_by"], v)} />}
        </FieldBox>
      </div>
      <p className="muted small">
        Retries, capabilities, prompt overheads and the other fields: in the JSON tab.
      </p>
    </>
  );
}

/** The model's deployments as rows: provider, upstream model, weight; one or more. */
function DeploymentRows({
  initial,
  providers,
  modelId,
  invalid,
  onChange,
}: {
  initial: Deployment[];
  providers: string[];
  modelId: string;
  invalid: boolean;
  onChange: (rows: Deployment[]) => void;
}) {
  const id = useId();
  // each row keeps a key of its own, so removing one does not move what is typed into another
  const [rows, setRows] = useState(() => initial.map((d, i) => ({ key: i, ...d })));
  const [next, setNext] = useState(initial.length);
  function change(list: typeof rows) {
    setRows(list);
    onChange(list.map(({ key: _key, ...d }) => d));
  }
  return (
    <fieldset className={invalid ? "fieldset field-invalid" : "fieldset"} aria-describedby={`${id}-hint`}>
      <legend>Deployments</legend>
      <p className="hint" id={`${id}-hint`}>
        Where calls to the model go: a provider, the name the upstream knows (empty:{" "}
        {modelId || "the model's id"}), and under weighted routing each one's share.
      </p>
      {invalid && <RefusalNote />}
      {rows.map((row, i) => (
        <div className="deployment-row" key={row.key}>
          <div className="field">
            <label htmlFor={`${id}-${row.key}-provider`}>Provider {rows.length > 1 ? i + 1 : ""}</label>
            <select
              id={`${id}-${row.key}-provider`}
              value={row.provider}
              onChange={(e) => change(rows.map((r) => (r === row ? { ...r, provider: e.target.value } : r)))}
            >
              {!providers.includes(row.provider) && (
                <option value={row.provider}>{row.provider || "choose"}</option>
              )}
              {providers.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={`${id}-${row.key}-upstream`}>Upstream model</label>
            <input
              id={`${id}-${row.key}-upstream`}
              value={row.upstream_model ?? ""}
              onChange={(e) =>
                change(
                  rows.map((r) => (r === row ? { ...r, upstream_model: e.target.value || undefined } : r)),
                )
              }
            />
          </div>
          <div className="field field-narrow">
            <label htmlFor={`${id}-${row.key}-weight`}>Weight</label>
            <NumberInput
              id={`${id}-${row.key}-weight`}
              value={row.weight}
              placeholder="1"
              onChange={(v) =>
                change(rows.map((r) => (r === row ? { ...r, weight: v as number | undefined } : r)))
              }
            />
          </div>
          {rows.length > 1 && (
            <button
              type="button"
              className="btn btn-small"
              onClick={() => change(rows.filter((r) => r !== row))}
            >
              Remove<span className="sr-only"> deployment {i + 1}</span>
            </button>
          )}
        </div>
      ))}
      <button
        type="button"
        className="btn btn-small"
        onClick={() => {
          change([...rows, { key: next, provider: providers[0] ?? "" }]);
          setNext((n) => n + 1);
        }}
      >
        Add deployment
      </button>
    </fieldset>
  );
}
