import { useEffect, useId, useState } from "react";
import { type AuditQuery, auditLog, usePaged } from "../../admin-api.ts";
import type { AuditEntryView } from "../../admin-types.ts";
import { type Change, diffJson, showValue } from "../../audit-diff.ts";
import { Badge } from "../../components/Badge.tsx";
import { DataTable } from "../../components/DataTable.tsx";
import { Dialog } from "../../components/Dialog.tsx";
import { Empty } from "../../components/Notice.tsx";
import { fmtDateTime, fmtInt, fmtShortDateTime, timeZone } from "../../format.ts";
import { navigate, useLocation } from "../../router.tsx";

const PAGE = 100;
const DAY = 86_400_000;
/** What the admin API and the console change, by the audit log's resource names. */
const RESOURCES = ["providers", "models", "plans", "accounts", "keys", "users", "admin-tokens"];

const FILTERS = ["resource", "actor", "from", "to"] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

function filtersFrom(query: URLSearchParams): Filters {
  return Object.fromEntries(FILTERS.map((f) => [f, query.get(f) ?? ""])) as Filters;
}

function queryOf(f: Filters): string {
  const q = new URLSearchParams();
  for (const name of FILTERS) if (f[name].trim()) q.set(name, f[name].trim());
  const s = q.toString();
  return s ? `?${s}` : "";
}

function apiFilters(f: Filters): AuditQuery {
  const day = (text: string) => (text ? Date.parse(`${text}T00:00:00Z`) : Number.NaN);
  const from = day(f.from);
  const to = day(f.to);
  return {
    resource: f.resource || undefined,
    actor: f.actor || undefined,
    from: Number.isNaN(from) ? undefined : from,
    to: Number.isNaN(to) ? undefined : to + DAY,
  };
}

/** Who changed what through the admin API and the console, with each change's before and after. */
export function AuditTab() {
  const location = useLocation();
  const applied = filtersFrom(location.query);
  const filterKey = queryOf(applied);
  const [draft, setDraft] = useState<Filters>(applied);
  const [shown, setShown] = useState<AuditEntryView | null>(null);
  const id = useId();

  useEffect(() => setDraft(filtersFrom(new URLSearchParams(filterKey))), [filterKey]);

  const list = usePaged(filterKey, (cursor, signal) =>
    auditLog({ ...apiFilters(filtersFrom(new URLSearchParams(filterKey))), limit: PAGE, cursor }, signal),
  );

  const set = (name: keyof Filters) => (e: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: e.target.value }));
  const search = (f: Filters) => navigate(`/operations/audit${queryOf(f)}`, { replace: true });
  const filtered = filterKey !== "";

  return (
    <section className="card section" aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      <p className="muted small">
        Every change made through the admin API or these pages, newest first: who (a user, an admin token, the
        CLI), what, and the resource before and after, secrets masked. Times are in your time zone,{" "}
        {timeZone()}.
      </p>
      <form
        className="filters"
        aria-label="Filter the audit log"
        onSubmit={(e) => {
          e.preventDefault();
          search(draft);
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-resource`}>Resource</label>
          <select id={`${id}-resource`} value={draft.resource} onChange={set("resource")}>
            <option value="">All resources</option>
            {RESOURCES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
            {draft.resource && !RESOURCES.includes(draft.resource) && (
              <option value={draft.resource}>{draft.resource}</option>
            )}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-actor`}>Actor</label>
          <input
            id={`${id}-actor`}
            value={draft.actor}
            placeholder="user:you@example.com"
            aria-describedby={`${id}-actor-hint`}
            onChange={set("actor")}
          />
          <p className="hint" id={`${id}-actor-hint`}>
            user:&lt;e-mail&gt;, token:&lt;id&gt; or cli
          </p>
        </div>
        <div className="field">
          <label htmlFor={`${id}-from`}>First day (UTC)</label>
          <input
            id={`${id}-from`}
            type="date"
            value={draft.from}
            max={draft.to || undefined}
            onChange={set("from")}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-to`}>Last day (UTC)</label>
          <input
            id={`${id}-to`}
            type="date"
            value={draft.to}
            min={draft.from || undefined}
            onChange={set("to")}
          />
        </div>
        <div className="filter-actions">
          <button type="submit" className="btn btn-primary">
            Filter
          </button>
          {filtered && (
            <button type="button" className="btn" onClick={() => search(filtersFrom(new URLSearchParams()))}>
              Clear filters
            </button>
          )}
        </div>
      </form>
      <DataTable
        rows={list.rows}
        error={list.error}
        onRetry={list.reload}
        loading="Loading the audit log"
        empty={
          filtered ? (
            <Empty title="No changes match these filters." />
          ) : (
            <Empty title="No changes yet.">
              Changes made through the admin API or these pages show here.
            </Empty>
          )
        }
        caption="The audit log, newest first"
        rowKey={(e) => e.id}
        rowProps={(e) => ({ "data-audit": `${e.resource}:${e.action}:${e.resource_id ?? ""}` })}
        columns={[
          {
            header: "Time",
            className: "nowrap",
            title: (e) => fmtDateTime(e.created_at),
            cell: (e) => fmtShortDateTime(e.created_at),
          },
          {
            header: "Actor",
            cell: (e) => (
              <span className="cell-clip" title={e.actor}>
                {e.actor}
              </span>
            ),
          },
          { header: "Action", cell: (e) => <Badge value={e.action} /> },
          { header: "Resource", cell: (e) => e.resource },
          {
            header: "Id",
            cell: (e) => (e.resource_id ? <code className="small">{e.resource_id}</code> : "–"),
          },
          {
            header: "Changes",
            cell: (e) => {
              const changes = diffJson(e.before, e.after).length;
              return (
                <button type="button" className="btn btn-small" onClick={() => setShown(e)}>
                  {changes === 1 ? "1 field" : `${fmtInt(changes)} fields`}
                  <span className="sr-only">
                    {" "}
                    of {e.action} {e.resource} {e.resource_id ?? ""}
                  </span>
                </button>
              );
            },
          },
        ]}
        footer={
          list.rows && (
            <div className="table-foot">
              <span className="muted small" role="status">
                {fmtInt(list.rows.length)} {list.rows.length === 1 ? "change" : "changes"} shown
                {list.more ? "; more below" : ""}
              </span>
              {list.more && (
                <button type="button" className="btn" disabled={list.loadingMore} onClick={list.loadMore}>
                  {list.loadingMore ? "Loading…" : "Load more"}
                </button>
              )}
            </div>
          )
        }
      />
      <Dialog
        open={shown !== null}
        title={shown ? `${shown.action} ${shown.resource} ${shown.resource_id ?? ""}`.trim() : "Change"}
        description={shown ? `${fmtDateTime(shown.created_at)} by ${shown.actor}` : undefined}
        onClose={() => setShown(null)}
        wide
      >
        {shown && <AuditDiff entry={shown} />}
      </Dialog>
    </section>
  );
}

const KIND_LABEL: Record<Change["kind"], string> = { added: "added", removed: "removed", changed: "changed" };

/** The fields a change touched, before and after, then both in full. */
function AuditDiff({ entry }: { entry: AuditEntryView }) {
  const changes = diffJson(entry.before, entry.after);
  return (
    <>
      <DataTable
        rows={changes}
        rowKey={(c) => c.path || "(value)"}
        empty={<Empty title="Nothing differs between before and after." />}
        caption="The fields this change touched"
        className="diff"
        rowProps={(c) => ({ className: `diff-${c.kind}` })}
        columns={[
          { header: "Field", cell: (c) => <code>{c.path || "(the value)"}</code> },
          { header: "Change", cell: (c) => KIND_LABEL[c.kind] },
          {
            header: "Before",
            className: "diff-before",
            cell: (c) => <span className="mono prewrap">{showValue(c.before)}</span>,
          },
          {
            header: "After",
            className: "diff-after",
            cell: (c) => <span className="mono prewrap">{showValue(c.after)}</span>,
          },
        ]}
      />
      <div className="form-grid">
        <div>
          <h3>Before</h3>
          <pre className="code-block">
            {entry.before == null ? "none" : JSON.stringify(entry.before, null, 2)}
          </pre>
        </div>
        <div>
          <h3>After</h3>
          <pre className="code-block">
            {entry.after == null ? "none" : JSON.stringify(entry.after, null, 2)}
          </pre>
        </div>
      </div>
    </>
  );
}
