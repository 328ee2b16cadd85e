// The account's agent sessions: each Claude Code or Codex run (or the calls that share an
// x-session-id) as one line summed from its call records, and one session opened as its calls
// in the order they were made, with the records' own table and detail.
import { useCallback, useEffect, useId, useRef, useState } from "react";
import { type ApiError, api, apiUrl, useApi } from "../api.ts";
import { type Column, DataTable } from "../components/DataTable.tsx";
import { Dialog } from "../components/Dialog.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtDateTime, fmtInt, fmtShortDateTime, fmtUsd, keyLabel, timeZone } from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import type {
  CallRecordView,
  KeyView,
  List,
  SessionCallsAnswer,
  SessionClient,
  SessionsAnswer,
  SessionView,
} from "../types.ts";
import { RecordDetail, recordColumns, reportProblem } from "./Records.tsx";

const PAGE = 50;
const CALLS_PAGE = 100;

const CLIENTS: Record<SessionClient, string> = {
  "claude-code": "Claude Code",
  codex: "Codex",
  header: "x-session-id",
};

const sessionPath = (id: string) => `/sessions/${encodeURIComponent(id)}`;

/** A list loaded a page at a time: the rows so far, the cursor of the next page, and more(). */
function usePages<Row, Page>(
  key: string,
  fetchPage: (cursor: string | null, signal: AbortSignal) => Promise<Page>,
  read: (page: Page) => { rows: Row[]; next: string | null },
) {
  const [rows, setRows] = useState<Row[] | null>(null);
  const [first, setFirst] = useState<Page | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const current = useRef<AbortController | null>(null);
  const fetcher = useRef(fetchPage);
  fetcher.current = fetchPage;
  const reader = useRef(read);
  reader.current = read;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for what is fetched
  const load = useCallback(
    async (cursor: string | null) => {
      current.current?.abort();
      const controller = new AbortController();
      current.current = controller;
      if (cursor) setLoadingMore(true);
      else {
        setRows(null);
        setNext(null);
      }
      setError(null);
      try {
        const page = await fetcher.current(cursor, controller.signal);
        const { rows: got, next: after } = reader.current(page);
        if (!cursor) setFirst(page);
        setRows((sofar) => (cursor && sofar ? [...sofar, ...got] : got));
        setNext(after);
      } catch (err) {
        if ((err as Error).name !== "AbortError") setError(err as Error);
      } finally {
        if (current.current === controller) setLoadingMore(false);
      }
    },
    [key],
  );

  useEffect(() => {
    void load(null);
    return () => current.current?.abort();
  }, [load]);

  return {
    rows,
    first,
    next,
    error,
    loadingMore,
    reload: () => void load(null),
    more: () => void load(next),
  };
}

function MoreFooter({
  shown,
  noun,
  next,
  loadingMore,
  more,
}: {
  shown: number;
  noun: [string, string];
  next: string | null;
  loadingMore: boolean;
  more: () => void;
}) {
  return (
    <div className="table-foot">
      <span className="muted small" role="status">
        {fmtInt(shown)} {shown === 1 ? noun[0] : noun[1]} shown{next ? "; more below" : ""}
      </span>
      {next && (
        <button type="button" className="btn" disabled={loadingMore} onClick={more}>
          {loadingMore ? "Loading…" : "Load more"}
        </button>
      )}
    </div>
  );
}

function ClientCell({ client }: { client: SessionClient | null }) {
  return client ? <span>{CLIENTS[client]}</span> : <span className="muted">–</span>;
}

const sessionColumns: Column<SessionView>[] = [
  {
    header: "Session",
    rowHeader: true,
    cell: (s) => (
      <Link to={sessionPath(s.session_id)} className="mono small cell-clip" title={s.session_id}>
        {s.session_id}
      </Link>
    ),
  },
  { header: "Client", className: "nowrap", cell: (s) => <ClientCell client={s.client} /> },
  {
    header: "First call",
    className: "nowrap",
    title: (s) => fmtDateTime(s.first_at),
    cell: (s) => fmtShortDateTime(s.first_at),
  },
  {
    header: "Last call",
    className: "nowrap",
    title: (s) => fmtDateTime(s.last_at),
    cell: (s) => fmtShortDateTime(s.last_at),
  },
  {
    header: "Calls",
    num: true,
    cell: (s) => (
      <>
        {fmtInt(s.calls)}
        {s.errors > 0 && <span className="cell-sub">{fmtInt(s.errors)} not ok</span>}
      </>
    ),
  },
  {
    header: "Tokens",
    num: true,
    cell: (s) => (
      <>
        {fmtInt(s.total_tokens)}
        <span className="cell-sub">
          {fmtInt(s.prompt_tokens)} in, {fmtInt(s.completion_tokens)} out
        </span>
      </>
    ),
  },
  { header: "Cost", num: true, cell: (s) => fmtUsd(s.cost_nanos) },
  {
    header: "Models",
    cell: (s) => (s.models.length ? s.models.join(", ") : <span className="muted">–</span>),
  },
  {
    header: "Keys",
    className: "nowrap",
    cell: (s) =>
      s.keys.map((k) => (
        <code key={k.id} className="cell-sub" title={k.name ?? undefined}>
          {k.prefix ? `${k.prefix}…` : k.id}
        </code>
      )),
  },
];

export function SessionsPage() {
  const location = useLocation();
  const key = location.query.get("key") ?? "";
  const keys = useApi<List<KeyView>>("/keys");
  const keyId = useId();
  const pages = usePages(
    key,
    (before, signal) => api<SessionsAnswer>("/sessions", { query: { key, limit: PAGE, before }, signal }),
    (page) => ({ rows: page.data, next: page.next_before }),
  );

  return (
    <>
      <PageHeader title="Sessions">
        <p>
          Each agent session of the account, the latest first: a Claude Code or Codex run, or the calls an
          application sent with the same <code>x-session-id</code> header, summed from its call records.
        </p>
      </PageHeader>
      <section className="card section">
        <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter the sessions">
          <div className="field">
            <label htmlFor={keyId}>Key</label>
            <select
              id={keyId}
              value={key}
              onChange={(e) =>
                navigate(`/sessions${e.target.value ? `?key=${encodeURIComponent(e.target.value)}` : ""}`, {
                  replace: true,
                })
              }
            >
              <option value="">All keys</option>
              {keys.data?.data.map((k) => (
                <option key={k.id} value={k.id}>
                  {keyLabel(k.prefix, k.name)}
                </option>
              ))}
            </select>
          </div>
        </form>
        <DataTable
          rows={pages.rows}
          error={pages.error}
          onRetry={pages.reload}
          loading="Loading the sessions"
          empty={
            <Empty title={key ? "No sessions through this key." : "No sessions yet."}>
              A call belongs to a session when its client names one: Claude Code and Codex do on their own;
              any other client can send an <code>x-session-id</code> header. See{" "}
              <Link to="/records">Call records</Link> for every call.
            </Empty>
          }
          className="sessions"
          caption="Agent sessions, the latest first"
          rowKey={(s) => s.session_id}
          rowProps={(s) => ({ "data-session-id": s.session_id })}
          columns={sessionColumns}
          footer={
            pages.rows && (
              <MoreFooter
                shown={pages.rows.length}
                noun={["session", "sessions"]}
                next={pages.next}
                loadingMore={pages.loadingMore}
                more={pages.more}
              />
            )
          }
        />
        <p className="muted small">Times are in your time zone, {timeZone()}.</p>
      </section>
    </>
  );
}

export function SessionPage({ id }: { id: string }) {
  const [detail, setDetail] = useState<CallRecordView | null>(null);
  const pages = usePages(
    id,
    (after, signal) =>
      api<SessionCallsAnswer>(sessionPath(id), { query: { limit: CALLS_PAGE, after }, signal }),
    (page) => ({ rows: page.data, next: page.next_after }),
  );
  const session = pages.first?.session;

  return (
    <>
      <PageHeader
        title="Session"
        actions={
          <>
            <a className="btn" href={apiUrl(`${sessionPath(id)}/export`, { format: "csv" })} download>
              Export CSV
            </a>
            <a className="btn" href={apiUrl(`${sessionPath(id)}/export`, { format: "jsonl" })} download>
              Export JSON Lines
            </a>
          </>
        }
      >
        <p>
          <code>{id}</code> · <Link to="/sessions">All sessions</Link>
        </p>
      </PageHeader>
      {pages.error ? (
        <ErrorNotice error={pages.error} onRetry={pages.reload} />
      ) : !session ? (
        <Loading what="Loading the session" />
      ) : (
        <>
          <section className="card section" aria-label="The session in sum">
            <dl className="details">
              {(
                [
                  ["Client", <ClientCell key="client" client={session.client} />],
                  ["First call", fmtDateTime(session.first_at)],
                  ["Last call", fmtDateTime(session.last_at)],
                  [
                    "Calls",
                    `${fmtInt(session.calls)}${session.errors ? ` (${fmtInt(session.errors)} not ok)` : ""}`,
                  ],
                  [
                    "Tokens",
                    `${fmtInt(session.prompt_tokens)} in, ${fmtInt(session.completion_tokens)} out, ${fmtInt(session.total_tokens)} total`,
                  ],
                  ["Cost", fmtUsd(session.cost_nanos)],
                  ["Models", session.models.join(", ") || "–"],
                  ["APIs", session.apis.join(", ")],
                  ["Keys", session.keys.map((k) => keyLabel(k.prefix, k.name)).join(", ") || "–"],
                ] as const
              ).map(([label, value]) => (
                <div key={label}>
                  <dt>{label}</dt>
                  <dd data-field={label}>{value}</dd>
                </div>
              ))}
            </dl>
          </section>
          <section className="card section">
            <h2>Its calls, in the order they were made</h2>
            <DataTable
              rows={pages.rows}
              loading="Loading the calls"
              className="records"
              caption="The session's calls, oldest first"
              rowKey={(r) => r.request_id}
              rowProps={(r) => ({ "data-request-id": r.request_id })}
              columns={recordColumns<CallRecordView>({
                time: fmtShortDateTime,
                onDetail: setDetail,
                onReport: reportProblem,
              })}
              footer={
                pages.rows && (
                  <MoreFooter
                    shown={pages.rows.length}
                    noun={["call", "calls"]}
                    next={pages.next}
                    loadingMore={pages.loadingMore}
                    more={pages.more}
                  />
                )
              }
            />
          </section>
        </>
      )}
      <Dialog open={detail !== null} title="Call record" onClose={() => setDetail(null)} wide>
        {detail && <RecordDetail record={detail} />}
      </Dialog>
    </>
  );
}
