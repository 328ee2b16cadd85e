import { useId } from "react";
import { useAdminList } from "../../admin-api.ts";
import type { ModelEntry, PlanEntry, RateLimitsEntry } from "../../admin-types.ts";
import { DataTable, listRows } from "../../components/DataTable.tsx";
import { ListSection, useListDialog } from "../../components/ListSection.tsx";
import { Empty } from "../../components/Notice.tsx";
import { fmtInt } from "../../format.ts";
import {
  CatalogNotice,
  DeleteEntryDialog,
  EntryDialog,
  type EntryForm,
  useCatalogSource,
} from "./catalog.tsx";
import { FieldBox, NumberInput, RefusalNote, TextInput } from "./fields.tsx";

/** "60 rpm · 100,000 tpm", or "no limit" */
export function rateText(limits: RateLimitsEntry | undefined): string {
  const parts = [
    limits?.rpm !== undefined && `${fmtInt(limits.rpm)} rpm`,
    limits?.tpm !== undefined && `${fmtInt(limits.tpm)} tpm`,
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(" · ") : "no limit";
}

export function PlansTab() {
  const source = useCatalogSource();
  const plans = useAdminList<PlanEntry>("/plans");
  const models = useAdminList<ModelEntry>("/models");
  const dialog = useListDialog<{ form: "add" } | { form: "edit" | "delete"; plan: PlanEntry }>(plans);
  const open = dialog.open;
  const modelIds = (models.data?.data ?? []).map((m) => m.id);
  const locked = !source.editable;

  return (
    <ListSection
      id="plans-title"
      title="Plans"
      action={locked ? undefined : { label: "Add plan", onClick: () => dialog.show({ form: "add" }) }}
      intro={
        <>
          <CatalogNotice source={source} />
          <p className="muted small">
            What accounts may use: their token quota, prices, models and rate limits. An account's plan is set
            under Administration, Accounts.
          </p>
        </>
      }
      status={dialog.status}
    >
      <DataTable
        {...listRows(plans)}
        loading="Loading the plans"
        empty={<Empty title="No plans." />}
        caption="Plans"
        rowKey={(p) => p.id}
        rowProps={(p) => ({ "data-plan": p.id })}
        columns={[
          { header: "Plan", rowHeader: true, cell: (p) => p.id },
          { header: "Quota", num: true, cell: (p) => fmtInt(p.quota_tokens) },
          {
            header: "Prices",
            num: true,
            cell: (p) => `×${p.price_multiplier ?? 1}`,
            title: () => "What the plan's accounts pay relative to list prices",
          },
          {
            header: "Models",
            cell: (p) => (p.models?.length ? p.models.join(", ") : <span className="muted">none</span>),
          },
          { header: "Per key", className: "nowrap", cell: (p) => rateText(p.rate_limits?.key) },
          { header: "Per account", className: "nowrap", cell: (p) => rateText(p.rate_limits?.account) },
          {
            header: "Safety",
            cell: (p) =>
              p.safety?.enabled === undefined ? (
                <span className="muted">global</span>
              ) : p.safety.enabled ? (
                `on${p.safety.streaming ? ` (${p.safety.streaming})` : ""}`
              ) : (
                "off"
              ),
          },
          {
            header: "Actions",
            hideHeader: true,
            cell: (p) => (
              <div className="row-actions">
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={locked}
                  onClick={() => dialog.show({ form: "edit", plan: p })}
                >
                  Edit<span className="sr-only"> {p.id}</span>
                </button>
                <button
                  type="button"
                  className="btn btn-small btn-danger"
                  disabled={locked}
                  onClick={() => dialog.show({ form: "delete", plan: p })}
                >
                  Delete<span className="sr-only"> {p.id}</span>
                </button>
              </div>
            ),
          },
        ]}
      />
      {(open?.form === "add" || open?.form === "edit") && (
        <EntryDialog<PlanEntry>
          kind="plans"
          original={open.form === "edit" ? open.plan : undefined}
          initial={{ id: "", quota_tokens: 1_000_000 }}
          onClose={dialog.close}
          onSaved={(p, changed) =>
            dialog.saved(
              open.form === "add"
                ? `Plan ${p.id} added.`
                : changed
                  ? `Plan ${p.id} saved.`
                  : "Nothing changed.",
            )
          }
        >
          {(form) => <PlanFields {...form} models={modelIds} />}
        </EntryDialog>
      )}
      {open?.form === "delete" && (
        <DeleteEntryDialog
          kind="plans"
          id={open.plan.id}
          onCancel={dialog.close}
          onDeleted={() => dialog.saved(`Plan ${open.plan.id} deleted.`)}
        />
      )}
    </ListSection>
  );
}

function PlanFields({ entry, set, invalid, creating, models }: EntryForm<PlanEntry> & { models: string[] }) {
  const id = useId();
  const chosen = entry.models ?? [];
  // models the plan names that the catalog does not have stay listed, so they can be removed
  const listed = [...models, ...chosen.filter((m) => !models.includes(m))];
  return (
    <>
      <div className="form-grid">
        {creating && (
          <FieldBox id={`${id}-id`} label="Id" hint="What accounts' plan names." invalid={invalid === "id"}>
            {(field) => (
              <TextInput {...field} required value={entry.id} onChange={(v) => set(["id"], v ?? "")} />
            )}
          </FieldBox>
        )}
        <FieldBox
          id={`${id}-quota`}
          label="Quota (tokens)"
          hint="Each account's, unless it has its own."
          invalid={invalid === "quota_tokens"}
        >
          {(field) => (
            <NumberInput
              {...field}
              integer
              value={entry.quota_tokens}
              onChange={(v) => set(["quota_tokens"], v)}
            />
          )}
        </FieldBox>
        <FieldBox
          id={`${id}-multiplier`}
          label="Price multiplier"
          hint="What its accounts pay relative to list prices (1 if empty)."
          invalid={invalid === "price_multiplier"}
        >
          {(field) => (
            <NumberInput
              {...field}
              value={entry.price_multiplier}
              placeholder="1"
              onChange={(v) => set(["price_multiplier"], v)}
            />
          )}
        </FieldBox>
      </div>
      <fieldset className={invalid === "models" ? "fieldset field-invalid" : "fieldset"}>
        <legend>Models</legend>
        {invalid === "models" && <RefusalNote />}
        {listed.length === 0 ? (
          <p className="muted small">The catalog has no models yet.</p>
        ) : (
          <div className="check-grid">
            {listed.map((m) => (
              <div className="field field-check" key={m}>
                <input
                  id={`${id}-model-${m}`}
                  type="checkbox"
                  checked={chosen.includes(m)}
                  onChange={(e) =>
                    set(["models"], e.target.checked ? [...chosen, m] : chosen.filter((x) => x !== m))
                  }
                />
                <label htmlFor={`${id}-model-${m}`}>{m}</label>
              </div>
            ))}
          </div>
        )}
      </fieldset>
      <fieldset className={invalid === "rate_limits" ? "fieldset field-invalid" : "fieldset"}>
        <legend>Rate limits</legend>
        {invalid === "rate_limits" && <RefusalNote />}
        <p className="hint">Per minute; empty: no limit. A key may have its own (Administration, Keys).</p>
        <div className="form-grid form-grid-narrow">
          {(
            [
              ["key", "rpm", "Requests, each key"],
              ["key", "tpm", "Tokens, each key"],
              ["account", "rpm", "Requests, each account"],
              ["account", "tpm", "Tokens, each account"],
            ] as const
          ).map(([scope, unit, label]) => (
            <FieldBox key={`${scope}-${unit}`} id={`${id}-${scope}-${unit}`} label={label}>
              {(field) => (
                <NumberInput
                  {...field}
                  integer
                  value={entry.rate_limits?.[scope]?.[unit]}
                  onChange={(v) => set(["rate_limits", scope, unit], v)}
                />
              )}
            </FieldBox>
          ))}
        </div>
      </fieldset>
      <p className="muted small">Content safety (safety.enabled, safety.streaming): in the JSON tab.</p>
    </>
  );
}
