import { type ReactNode, useCallback, useEffect, useId, useRef, useState } from "react";
import { type ApiError, api, apiUrl, useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { Dialog } from "../components/Dialog.tsx";
import { Empty } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { Tabs } from "../components/Tabs.tsx";
import {
  fmtDateTime,
  fmtInt,
  fmtMs,
  fmtShortDateTime,
  fmtTime,
  fmtUsd,
  paramsText,
  timeZone,
  utcDayStartLocal,
} from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { draftFromRecord, recordError } from "../tickets.ts";
import {
  CALL_STATUSES,
  type CallRecordView,
  type KeyView,
  type List,
  type ModelView,
  type RecordsAnswer,
} from "../types.ts";

type View = "today" | "year";
const PAGE = 100;

interface Filters {
  view: View;
  key: string;
  model: string;
  status: string;
}

function filtersFrom(query: URLSearchParams): Filters {
  return {
    view: query.get("view") === "year" ? "year" : "today",
    key: query.get("key") ?? "",
    model: query.get("model") ?? "",
    status: query.get("status") ?? "",
  };
}

function queryOf(f: Filters): string {
  const q = new URLSearchParams();
  if (f.view !== "today") q.set("view", f.view);
  if (f.key) q.set("key", f.key);
  if (f.model) q.set("model", f.model);
  if (f.status) q.set("status", f.status);
  const s = q.toString();
  return s ? `?${s}` : "";
}

export function reportProblem(record: CallRecordView): void {
  navigate("/tickets/new", { state: { draft: draftFromRecord(record) } });
}

export function RecordsPage() {
  const location = useLocation();
  const filters = filtersFrom(location.query);
  const keys = useApi<List<KeyView>>("/keys");
  const models = useApi<List<ModelView>>("/models");
  const [rows, setRows] = useState<CallRecordView[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const [detail, setDetail] = useState<CallRecordView | null>(null);
  const request = useRef<AbortController | null>(null);
  const filterKey = queryOf(filters);

  const load = useCallback(
    async (before: string | null) => {
      request.current?.abort();
      const controller = new AbortController();
      request.current = controller;
      const f = filtersFrom(new URLSearchParams(filterKey));
      if (before) setLoadingMore(true);
      else {
        setRows(null);
        setNext(null);
      }
      setError(null);
      try {
        const page = await api<RecordsAnswer>("/records", {
          query: { view: f.view, key: f.key, model: f.model, status: f.status, limit: PAGE, before },
          signal: controller.signal,
        });
        setRows((current) => (before && current ? [...current, ...page.data] : page.data));
        setNext(page.next_before ?? null);
      } catch (err) {
        if ((err as Error).name !== "AbortError") setError(err as Error);
      } finally {
        if (request.current === controller) setLoadingMore(false);
      }
    },
    [filterKey],
  );

  useEffect(() => {
    void load(null);
    return () => request.current?.abort();
  }, [load]);

  const setFilters = (change: Partial<Filters>) =>
    navigate(`/records${queryOf({ ...filters, ...change })}`, { replace: true });

  const filtered = Boolean(filters.key || filters.model || filters.status);
  const exportQuery = { view: filters.view, key: filters.key, model: filters.model, status: filters.status };
  const keyId = useId();
  const modelId = useId();
  const statusId = useId();

  return (
    <>
      <PageHeader title="Call records">
        <p>Every call through your keys, with what it consumed and how it ended.</p>
      </PageHeader>
      <Tabs
        label="Which records"
        idBase="records"
        value={filters.view}
        onChange={(view) => setFilters({ view })}
        items={[
          { id: "today", label: "Today" },
          { id: "year", label: "Last year" },
        ]}
      />
      <section
        className="card section tab-panel"
        id="records-panel"
        role="tabpanel"
        aria-labelledby={`records-tab-${filters.view}`}
      >
        <p className="muted small view-note">
          {filters.view === "today" ? (
            <>
              Every call of the current UTC day, failed ones too: since 00:00 UTC ({utcDayStartLocal()} in
              your time zone). Times are in your time zone, {timeZone()}.
            </>
          ) : (
            <>
              The newest 1,000 calls that consumed tokens in the last 365 days (today included); filters apply
              within those. Need more?{" "}
              <Link
                to="/tickets/new"
                state={{ draft: { kind: "older_history", subject: "Older call history" } }}
              >
                Request older history
              </Link>{" "}
              or{" "}
              <Link
                to="/tickets/new"
                state={{ draft: { kind: "extra_export", subject: "Extra export of call records" } }}
              >
                an extra export
              </Link>
              . Times are in your time zone, {timeZone()}.
            </>
          )}
        </p>
        <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter the records">
          <div className="field">
            <label htmlFor={keyId}>Key</label>
            <select id={keyId} value={filters.key} onChange={(e) => setFilters({ key: e.target.value })}>
              <option value="">All keys</option>
              {keys.data?.data.map((k) => (
                <option key={k.id} value={k.id}>
                  {k.prefix}… {k.name ?? ""}
                </option>
              ))}
              {filters.key && !keys.data?.data.some((k) => k.id === filters.key) && (
                <option value={filters.key}>{filters.key}</option>
              )}
            </select>
          </div>
          <div className="field">
            <label htmlFor={modelId}>Model</label>
            <select
              id={modelId}
              value={filters.model}
              onChange={(e) => setFilters({ model: e.target.value })}
            >
              <option value="">All models</option>
              {models.data?.data.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.id}
                </option>
              ))}
              {filters.model && !models.data?.data.some((m) => m.id === filters.model) && (
                <option value={filters.model}>{filters.model}</option>
              )}
            </select>
          </div>
          <div className="field">
            <label htmlFor={statusId}>Status</label>
            <select
              id={statusId}
              value={filters.status}
              onChange={(e) => setFilters({ status: e.target.value })}
            >
              <option value="">All statuses</option>
              {CALL_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s.replaceAll("_", " ")}
                </option>
              ))}
            </select>
          </div>
          <div className="filter-actions">
            {filtered && (
              <button
                type="button"
                className="btn"
                onClick={() => setFilters({ key: "", model: "", status: "" })}
              >
                Clear filters
              </button>
            )}
            <a className="btn" href={apiUrl("/records/export", { ...exportQuery, format: "csv" })} download>
              Export CSV
            </a>
            <a className="btn" href={apiUrl("/records/export", { ...exportQuery, format: "jsonl" })} download>
              Export JSON Lines
            </a>
          </div>
        </form>

        <DataTable
          rows={rows}
          error={error}
          onRetry={() => void load(null)}
          loading="Loading the records"
          empty={
            filtered ? (
              <Empty title="No calls match these filters.">Clear a filter to see more.</Empty>
            ) : filters.view === "today" ? (
              <Empty title="No calls today yet.">
                Calls made since 00:00 UTC appear here as soon as they finish.{" "}
                <Link to="/keys">Get a key</Link> to make one.
              </Empty>
            ) : (
              <Empty title="No calls with consumption in the last 365 days." />
            )
          }
          className="records"
          caption={`Call records, ${filters.view === "today" ? "today (UTC)" : "last year"}, newest first`}
          rowKey={(r) => r.request_id}
          rowProps={(r) => ({ "data-request-id": r.request_id })}
          columns={recordColumns<CallRecordView>({
            time: filters.view === "today" ? fmtTime : fmtShortDateTime,
            onDetail: setDetail,
            onReport: reportProblem,
          })}
          footer={
            rows && (
              <div className="table-foot">
                <span className="muted small" role="status">
                  {fmtInt(rows.length)} {rows.length === 1 ? "record" : "records"} shown
                  {next ? "; more below" : ""}
                </span>
                {next && (
                  <button
                    type="button"
                    className="btn"
                    disabled={loadingMore}
                    onClick={() => void load(next)}
                  >
                    {loadingMore ? "Loading…" : "Load more"}
                  </button>
                )}
              </div>
            )
          }
        />
      </section>
      <Dialog open={detail !== null} title="Call record" onClose={() => setDetail(null)} wide>
        {detail && <RecordDetail record={detail} />}
      </Dialog>
    </>
  );
}

/**
 * A call record's columns, for an account's records and for the operators' records of every
 * account (which add their own before these).
 */
export function recordColumns<R extends CallRecordView>({
  time,
  onDetail,
  onReport,
}: {
  /** the Time column's text: the time of day for today's calls, the date too for older ones */
  time: (ms: number) => string;
  onDetail: (record: R) => void;
  /** "Report a problem" with a record; without it, no such button */
  onReport?: (record: R) => void;
}): Column<R>[] {
  return [
    {
      header: "Time",
      className: "nowrap",
      title: (r) => fmtDateTime(r.created_at),
      cell: (r) => time(r.created_at),
    },
    {
      header: "Key",
      className: "nowrap",
      cell: (r) =>
        r.key_prefix ? (
          <>
            <code>{r.key_prefix}…</code>
            {r.key_name && (
              <span className="cell-sub cell-clip" title={r.key_name}>
                {r.key_name}
              </span>
            )}
          </>
        ) : (
          <span className="muted">no key</span>
        ),
    },
    {
      header: "Model",
      className: "nowrap",
      cell: (r) => r.model ?? <span className="muted">–</span>,
    },
    { header: "API", className: "nowrap", cell: (r) => <code>{r.api}</code> },
    { header: "In", num: true, cell: (r) => fmtInt(r.prompt_tokens) },
    { header: "Out", num: true, cell: (r) => fmtInt(r.completion_tokens) },
    { header: "Total", num: true, cell: (r) => fmtInt(r.total_tokens) },
    {
      header: "Cost",
      num: true,
      cell: (r) =>
        r.cost_source === "unpriced" ? (
          <span className="muted" title="The model has no prices: the call cost nothing">
            unpriced
          </span>
        ) : (
          fmtUsd(r.cost_nanos)
        ),
    },
    {
      header: "Status",
      className: "nowrap",
      cell: (r) => (
        <>
          <Badge value={r.status} />
          {r.status !== "ok" && (
            <span className="cell-sub">
              {r.http_status}
              {r.error_code && r.error_code !== r.status ? ` ${r.error_code}` : ""}
            </span>
          )}
        </>
      ),
    },
    { header: "Latency", num: true, cell: (r) => fmtMs(r.latency_ms) },
    {
      header: "Request id",
      cell: (r) => (
        <div className="cell-stack">
          <button
            type="button"
            className="link-button mono small"
            onClick={() => onDetail(r)}
            aria-label={`Details of ${r.request_id}`}
          >
            {r.request_id}
          </button>
          {onReport && (
            <button type="button" className="btn btn-small" onClick={() => onReport(r)}>
              Report a problem<span className="sr-only"> with {r.request_id}</span>
            </button>
          )}
        </div>
      ),
    },
  ];
}

const COST_SOURCES: Record<NonNullable<CallRecordView["cost_source"]>, string> = {
  config: "the model's configured prices",
  table: "the price table (genai-prices)",
  unpriced: "none: the model has no prices",
};

/** What the prompt and the completion were made of, where the upstream said. */
function tokenKinds(r: CallRecordView): string {
  return `${fmtInt(r.cached_tokens)} cache reads, ${fmtInt(r.cache_write_tokens)} cache writes (of the input); ${fmtInt(r.reasoning_tokens)} reasoning (of the output)`;
}

/** A record in full; `account` for the operators' records of every account, which report no problems. */
export function RecordDetail({ record, account }: { record: CallRecordView; account?: string }) {
  const rows: [string, ReactNode][] = [
    ["Request id", <code key="id">{record.request_id}</code>],
    ...(account === undefined ? [] : [["Account", account] as [string, ReactNode]]),
    ["Time", fmtDateTime(record.created_at)],
    ["Key", record.key_prefix ? `${record.key_prefix}… ${record.key_name ?? ""}` : "no key"],
    ["Model", record.model ?? "–"],
    ["API", <code key="api">{record.api}</code>],
    [
      "Session",
      record.session_id ? (
        <Link key="session" to={`/sessions/${encodeURIComponent(record.session_id)}`}>
          <code>{record.session_id}</code>
        </Link>
      ) : (
        "–"
      ),
    ],
    ["Status", `${record.status} (HTTP ${record.http_status})`],
    ["Error", recordError(record) || "–"],
    [
      "Tokens",
      `${fmtInt(record.prompt_tokens)} in, ${fmtInt(record.completion_tokens)} out, ${fmtInt(record.total_tokens)} total`,
    ],
    ["Of which", tokenKinds(record)],
    ["Usage from", record.usage_source],
    ["Cost", fmtUsd(record.cost_nanos)],
    ["Prices", record.cost_source ? COST_SOURCES[record.cost_source] : "–"],
    ["Latency", fmtMs(record.latency_ms)],
    ["First token after", fmtMs(record.ttft_ms)],
    ["Streamed", record.stream ? "yes" : "no"],
    [
      "Content safety",
      record.safety_verdict
        ? `${record.safety_verdict}${record.safety_categories?.length ? ` (${record.safety_categories.join(", ")})` : ""}`
        : "not reviewed",
    ],
  ];
  return (
    <>
      <dl className="details">
        {rows.map(([label, value]) => (
          <div key={label}>
            <dt>{label}</dt>
            <dd data-field={label}>{value}</dd>
          </div>
        ))}
      </dl>
      <h3>Parameters</h3>
      <pre className="code-block">
        {paramsText(record.params) ? JSON.stringify(record.params, null, 2) : "none"}
      </pre>
      {account === undefined && (
        <div className="dialog-actions">
          <button type="button" className="btn btn-primary" onClick={() => reportProblem(record)}>
            Report a problem with this call
          </button>
        </div>
      )}
    </>
  );
}
