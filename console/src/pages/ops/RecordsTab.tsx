import { useEffect, useId, useState } from "react";
import { type RecordsQuery, records, recordsExportUrl, useAdminList, usePaged } from "../../admin-api.ts";
import type { AdminRecordView, ModelEntry } from "../../admin-types.ts";
import { useApi } from "../../api.ts";
import { DataTable } from "../../components/DataTable.tsx";
import { Dialog } from "../../components/Dialog.tsx";
import { Empty } from "../../components/Notice.tsx";
import { fmtInt, fmtShortDateTime, timeZone } from "../../format.ts";
import { navigate, useLocation } from "../../router.tsx";
import { type AccountView, type AdminKeyView, API_NAMES, CALL_STATUSES, type List } from "../../types.ts";
import { RecordDetail, recordColumns } from "../Records.tsx";

const PAGE = 100;
const DAY = 86_400_000;

const FILTERS = ["from", "to", "account", "key", "model", "status", "request_id", "api"] as const;
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

/** The API's filters: the days as Unix ms, the last day whole. */
function apiFilters(f: Filters): RecordsQuery {
  const day = (text: string) => (text ? Date.parse(`${text}T00:00:00Z`) : Number.NaN);
  const from = day(f.from);
  const to = day(f.to);
  return {
    from: Number.isNaN(from) ? undefined : from,
    to: Number.isNaN(to) ? undefined : to + DAY,
    account: f.account || undefined,
    key: f.key || undefined,
    model: f.model || undefined,
    status: f.status || undefined,
    request_id: f.request_id || undefined,
    api: f.api || undefined,
  };
}

/** Every account's call records, searched by request id, account, key, model, status and days. */
export function RecordsTab() {
  const location = useLocation();
  const applied = filtersFrom(location.query);
  const filterKey = queryOf(applied);
  const [draft, setDraft] = useState<Filters>(applied);
  const accounts = useApi<List<AccountView>>("/admin/accounts");
  const keys = useApi<List<AdminKeyView>>("/admin/keys");
  const models = useAdminList<ModelEntry>("/models");
  const [detail, setDetail] = useState<AdminRecordView | null>(null);
  const id = useId();

  // the URL changed (back, a link): the form shows what is applied
  useEffect(() => setDraft(filtersFrom(new URLSearchParams(filterKey))), [filterKey]);

  const list = usePaged(filterKey, (cursor, signal) =>
    records({ ...apiFilters(filtersFrom(new URLSearchParams(filterKey))), limit: PAGE, cursor }, signal),
  );

  const set = (name: keyof Filters) => (e: { target: { value: string } }) =>
    setDraft((d) => ({ ...d, [name]: e.target.value }));
  const search = (f: Filters) => navigate(`/operations/records${queryOf(f)}`, { replace: true });
  const filtered = filterKey !== "";
  const exportQuery = apiFilters(applied);
  const keysShown = (keys.data?.data ?? []).filter((k) => !draft.account || k.account_id === draft.account);

  return (
    <section className="card section" aria-labelledby="records-title">
      <h2 id="records-title">Call records of every account</h2>
      <p className="muted small">
        Newest first. Days are UTC days, both included; times are in your time zone, {timeZone()}. What the
        store keeps is what retention leaves (docs/console.md).
      </p>
      <form
        className="filters"
        aria-label="Search the records"
        onSubmit={(e) => {
          e.preventDefault();
          search(draft);
        }}
      >
        <div className="field field-wide">
          <label htmlFor={`${id}-request`}>Request id</label>
          <input
            id={`${id}-request`}
            className="mono"
            value={draft.request_id}
            spellCheck={false}
            onChange={set("request_id")}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-account`}>Account</label>
          <select
            id={`${id}-account`}
            value={draft.account}
            onChange={(e) => setDraft((d) => ({ ...d, account: e.target.value, key: "" }))}
          >
            <option value="">All accounts</option>
            {accounts.data?.data.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
            {draft.account && !accounts.data?.data.some((a) => a.id === draft.account) && (
              <option value={draft.account}>{draft.account}</option>
            )}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-key`}>Key</label>
          <select id={`${id}-key`} value={draft.key} onChange={set("key")}>
            <option value="">All keys</option>
            {keysShown.map((k) => (
              <option key={k.id} value={k.id}>
                {k.prefix}… {k.name ?? ""}
                {draft.account ? "" : ` (${k.account_name})`}
              </option>
            ))}
            {draft.key && !keysShown.some((k) => k.id === draft.key) && (
              <option value={draft.key}>{draft.key}</option>
            )}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-model`}>Model</label>
          <input id={`${id}-model`} list={`${id}-models`} value={draft.model} onChange={set("model")} />
          <datalist id={`${id}-models`}>
            {models.data?.data.map((m) => (
              <option key={m.id} value={m.id} />
            ))}
          </datalist>
        </div>
        <div className="field">
          <label htmlFor={`${id}-status`}>Status</label>
          <select id={`${id}-status`} value={draft.status} onChange={set("status")}>
            <option value="">All statuses</option>
            {CALL_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replaceAll("_", " ")}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-api`}>API</label>
          <select id={`${id}-api`} value={draft.api} onChange={set("api")}>
            <option value="">All APIs</option>
            {API_NAMES.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
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
            Search
          </button>
          {filtered && (
            <button type="button" className="btn" onClick={() => search(filtersFrom(new URLSearchParams()))}>
              Clear filters
            </button>
          )}
          <a className="btn" href={recordsExportUrl(exportQuery, "csv")} download>
            Export CSV
          </a>
          <a className="btn" href={recordsExportUrl(exportQuery, "jsonl")} download>
            Export JSON Lines
          </a>
        </div>
      </form>
      <DataTable
        rows={list.rows}
        error={list.error}
        onRetry={list.reload}
        loading="Loading the records"
        empty={
          filtered ? (
            <Empty title="No calls match this search.">Clear a filter to see more.</Empty>
          ) : (
            <Empty title="No calls yet." />
          )
        }
        className="records"
        caption="Call records of every account, newest first"
        rowKey={(r) => r.request_id}
        rowProps={(r) => ({ "data-request-id": r.request_id })}
        columns={[
          {
            header: "Account",
            className: "nowrap",
            cell: (r) => r.account_name ?? <code className="small">{r.account_id ?? "–"}</code>,
          },
          ...recordColumns<AdminRecordView>({ time: fmtShortDateTime, onDetail: setDetail }),
        ]}
        footer={
          list.rows && (
            <div className="table-foot">
              <span className="muted small" role="status">
                {fmtInt(list.rows.length)} {list.rows.length === 1 ? "record" : "records"} shown
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
      <Dialog open={detail !== null} title="Call record" onClose={() => setDetail(null)} wide>
        {detail && (
          <RecordDetail record={detail} account={detail.account_name ?? detail.account_id ?? "no account"} />
        )}
      </Dialog>
    </section>
  );
}
