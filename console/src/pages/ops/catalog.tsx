// What the providers', models' and plans' pages share: whether the catalog may be edited here
// (catalog.source), the notice when it may not, and the dialog that adds or edits an entry
// with a form for its common fields and a JSON editor for all of them.
import { type ReactNode, useEffect, useId, useRef, useState } from "react";
import { createEntry, deleteEntry, updateEntry, useAdminApi } from "../../admin-api.ts";
import type { CatalogEntry, CatalogKind, CatalogState } from "../../admin-types.ts";
import { ApiError, type Loaded } from "../../api.ts";
import {
  createBody,
  editable,
  entryPatch,
  fieldOfParam,
  parseEntryJson,
  withField,
} from "../../catalog-edit.ts";
import { ConfirmDialog } from "../../components/ConfirmDialog.tsx";
import { FormDialog } from "../../components/FormDialog.tsx";
import { ErrorNotice } from "../../components/Notice.tsx";
import { Tabs } from "../../components/Tabs.tsx";
import { useSubmit } from "../../submit.ts";
import { FieldBox, Refusal } from "./fields.tsx";

export interface CatalogSource {
  state: Loaded<CatalogState>;
  /** the store holds the catalog: the admin API changes it. False while that is not known. */
  editable: boolean;
}

export function useCatalogSource(): CatalogSource {
  const state = useAdminApi<CatalogState>("/catalog");
  return { state, editable: state.data?.source === "store" };
}

/** Said above a catalog list when the configuration file is its source, or when that is not known. */
export function CatalogNotice({ source }: { source: CatalogSource }) {
  const { state } = source;
  if (state.error) return <ErrorNotice error={state.error} onRetry={state.reload} />;
  if (state.data?.source !== "file") return null;
  return (
    <div className="notice notice-info" data-testid="catalog-read-only">
      <p>
        The catalog is managed in the configuration file (<code>catalog.source: file</code>): change its
        providers, models and plans there and reload the gateway. They are shown here read-only.
      </p>
    </div>
  );
}

const WHAT: Record<CatalogKind, string> = { providers: "provider", models: "model", plans: "plan" };

/** What the form of an entry gets: the entry, ways to change it, and the field the gateway refused. */
export interface EntryForm<T extends CatalogEntry> {
  entry: T;
  /** sets the value at a path (["pricing", "input"]); undefined or empty removes it */
  set: (path: string[], value: unknown) => void;
  update: (change: (entry: T) => T) => void;
  /** the top-level field the last refusal named */
  invalid: string | null;
  creating: boolean;
}

/**
 * Adds an entry (from `initial`) or edits `original`. The form and the JSON editor edit one
 * copy; switching between them carries the changes over. An edit sends only what changed.
 */
export function EntryDialog<T extends CatalogEntry>({
  kind,
  original,
  initial,
  onClose,
  onSaved,
  children,
}: {
  kind: CatalogKind;
  original?: T;
  initial: T;
  onClose: () => void;
  /** `changed` false: the edit changed nothing, nothing was sent */
  onSaved: (entry: T, changed: boolean) => void;
  children: (form: EntryForm<T>) => ReactNode;
}) {
  const what = WHAT[kind];
  const [entry, setEntry] = useState<T>(() => editable(original ?? initial));
  const [mode, setMode] = useState<"form" | "json">("form");
  const [text, setText] = useState("");
  const [modeError, setModeError] = useState<unknown>(null);
  const jsonId = useId();
  const submit = useSubmit(async () => {
    const current = mode === "json" ? (parseEntryJson(text) as T) : entry;
    if (!original) {
      onSaved(await createEntry<T>(kind, createBody(current) as T), true);
      return;
    }
    const patch = entryPatch(original, current);
    if (Object.keys(patch).length === 0) onSaved(original, false);
    else onSaved(await updateEntry<T>(kind, original.id, patch), true);
  });

  function switchTo(next: "form" | "json") {
    if (next === mode) return;
    setModeError(null);
    if (next === "json") {
      setText(JSON.stringify(entry, null, 2));
      setMode("json");
      return;
    }
    try {
      setEntry(parseEntryJson(text) as T);
      setMode("form");
    } catch (err) {
      setModeError(err);
    }
  }

  const invalid = submit.error instanceof ApiError ? fieldOfParam(submit.error.param, kind) : null;
  const refusal = submit.error instanceof ApiError ? submit.error.message : null;
  const idBase = `${kind}-entry`;
  const panel = useRef<HTMLDivElement>(null);
  // a refusal that names a field of the form: the field is where to look, and what to change
  // biome-ignore lint/correctness/useExhaustiveDependencies: each refusal, also of the same field again
  useEffect(() => {
    if (invalid) panel.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [invalid, submit.error]);
  return (
    <FormDialog
      wide
      title={original ? `Edit ${what} ${original.id}` : `Add a ${what}`}
      description={
        original
          ? "Only what you change is sent. The gateway checks the entry as it checks the configuration file."
          : "The configuration file's fields (docs/configuration.md); the gateway checks them as it checks the file."
      }
      onClose={onClose}
      submit={submit}
      label={original ? "Save" : `Add ${what}`}
      busyLabel="Saving…"
    >
      <Tabs
        label="Edit as"
        idBase={idBase}
        value={mode}
        onChange={switchTo}
        items={[
          { id: "form", label: "Form" },
          { id: "json", label: "JSON" },
        ]}
      />
      <div
        ref={panel}
        className="entry-panel"
        id={`${idBase}-panel`}
        role="tabpanel"
        aria-labelledby={`${idBase}-tab-${mode}`}
      >
        <ErrorNotice error={modeError} />
        <Refusal.Provider value={refusal}>
          {mode === "form" ? (
            children({
              entry,
              set: (path, value) => setEntry((e) => withField(e, path, value)),
              update: (change) => setEntry(change),
              invalid,
              creating: !original,
            })
          ) : (
            <FieldBox
              id={jsonId}
              label={`The whole ${what} (JSON)`}
              hint="Every field the configuration file takes, nested ones included. Upstream keys show masked: leave them to keep them."
            >
              {(field) => (
                <textarea
                  {...field}
                  className="mono json-editor"
                  rows={18}
                  spellCheck={false}
                  value={text}
                  onChange={(e) => setText(e.target.value)}
                />
              )}
            </FieldBox>
          )}
        </Refusal.Provider>
      </div>
    </FormDialog>
  );
}

/** Asks, then deletes an entry; the gateway refuses while a model or plan still names it. */
export function DeleteEntryDialog({
  kind,
  id,
  onCancel,
  onDeleted,
}: {
  kind: CatalogKind;
  id: string;
  onCancel: () => void;
  onDeleted: () => void;
}) {
  const what = WHAT[kind];
  return (
    <ConfirmDialog
      title={`Delete ${what} ${id}?`}
      confirm={`Delete ${what}`}
      busyLabel="Deleting…"
      keep={`Keep the ${what}`}
      onCancel={onCancel}
      action={async () => {
        await deleteEntry(kind, id);
        onDeleted();
      }}
    >
      <p>
        {kind === "plans"
          ? "Accounts on it keep its id: move them to another plan first."
          : kind === "models"
            ? "Clients can no longer call it; its call records stay."
            : "Models can no longer be routed to it; its call records stay."}{" "}
        The gateway refuses while a model or plan still names it. The audit log keeps the entry as it was.
      </p>
    </ConfirmDialog>
  );
}
