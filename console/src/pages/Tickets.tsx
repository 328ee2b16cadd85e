import { useId } from "react";
import { useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtShortDateTime } from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { useSession } from "../session.tsx";
import { KIND_LABELS } from "../tickets.ts";
import type { Ticket } from "../types.ts";

/** The ticket list; admins see every account's tickets (the server decides what comes back). */
export function TicketList({ basePath }: { basePath: string }) {
  const { isAdmin, acting } = useSession();
  const location = useLocation();
  const status = location.query.get("status") ?? "";
  const tickets = useApi<{ data: Ticket[] }>("/tickets", { status });
  const statusId = useId();
  const allAccounts = isAdmin && !acting;
  return (
    <>
      <div className="filters">
        <div className="field">
          <label htmlFor={statusId}>Status</label>
          <select
            id={statusId}
            value={status}
            onChange={(e) =>
              navigate(`${basePath}${e.target.value ? `?status=${e.target.value}` : ""}`, { replace: true })
            }
          >
            <option value="">All</option>
            <option value="open">Open</option>
            <option value="answered">Answered</option>
            <option value="closed">Closed</option>
          </select>
        </div>
      </div>
      {tickets.error ? (
        <ErrorNotice error={tickets.error} onRetry={tickets.reload} />
      ) : !tickets.data ? (
        <Loading what="Loading the tickets" />
      ) : tickets.data.data.length === 0 ? (
        <Empty title={status ? `No ${status} tickets.` : "No tickets yet."}>
          Something went wrong with a call? Open it in <Link to="/records">Call records</Link> and choose
          "Report a problem": the ticket starts with the call's details.
        </Empty>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Support tickets, latest activity first</caption>
            <thead>
              <tr>
                <th scope="col">Subject</th>
                {allAccounts && <th scope="col">Account</th>}
                <th scope="col">Kind</th>
                <th scope="col">Status</th>
                <th scope="col">Opened</th>
                <th scope="col">Last activity</th>
              </tr>
            </thead>
            <tbody>
              {tickets.data.data.map((t) => (
                <tr key={t.id}>
                  <td>
                    <Link to={`/tickets/${encodeURIComponent(t.id)}`}>{t.subject}</Link>
                  </td>
                  {allAccounts && <td>{t.account_name ?? t.account_id}</td>}
                  <td>{KIND_LABELS[t.kind] ?? t.kind}</td>
                  <td>
                    <Badge value={t.status} />
                  </td>
                  <td className="nowrap">{fmtShortDateTime(t.created_at)}</td>
                  <td className="nowrap">{fmtShortDateTime(t.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

export function TicketsPage() {
  const { isAdmin, acting } = useSession();
  return (
    <>
      <PageHeader
        title="Tickets"
        actions={
          <Link to="/tickets/new" className="btn btn-primary">
            New ticket
          </Link>
        }
      >
        <p>
          {isAdmin && !acting
            ? "Support tickets of every account. Answer them here; the account sees your reply at once."
            : "Support requests: problems with calls, plan upgrades, older history, extra exports. We answer here."}
        </p>
      </PageHeader>
      <section className="card section">
        <TicketList basePath="/tickets" />
      </section>
    </>
  );
}
