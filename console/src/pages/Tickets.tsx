import { useId } from "react";
import { useApi } from "../api.ts";
import { Badge } from "../components/Badge.tsx";
import { DataTable, listRows } from "../components/DataTable.tsx";
import { Empty } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtShortDateTime } from "../format.ts";
import { Link, navigate, useLocation } from "../router.tsx";
import { useSession } from "../session.tsx";
import { KIND_LABELS, STATUS_LABELS } from "../tickets.ts";
import { type List, TICKET_STATUSES, type TicketView } from "../types.ts";

/** The ticket list; admins see every account's tickets (the server decides what comes back). */
export function TicketList({ basePath }: { basePath: string }) {
  const { isAdmin, acting } = useSession();
  const location = useLocation();
  const status = location.query.get("status") ?? "";
  const tickets = useApi<List<TicketView>>("/tickets", { status });
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
            {TICKET_STATUSES.map((s) => (
              <option key={s} value={s}>
                {STATUS_LABELS[s]}
              </option>
            ))}
          </select>
        </div>
      </div>
      <DataTable
        {...listRows(tickets)}
        loading="Loading the tickets"
        empty={
          <Empty title={status ? `No ${status} tickets.` : "No tickets yet."}>
            Something went wrong with a call? Open it in <Link to="/records">Call records</Link> and choose
            "Report a problem": the ticket starts with the call's details.
          </Empty>
        }
        caption="Support tickets, latest activity first"
        rowKey={(t) => t.id}
        columns={[
          {
            header: "Subject",
            cell: (t) => <Link to={`/tickets/${encodeURIComponent(t.id)}`}>{t.subject}</Link>,
          },
          allAccounts && { header: "Account", cell: (t) => t.account_name ?? t.account_id },
          { header: "Kind", cell: (t) => KIND_LABELS[t.kind] ?? t.kind },
          { header: "Status", cell: (t) => <Badge value={t.status} /> },
          { header: "Opened", className: "nowrap", cell: (t) => fmtShortDateTime(t.created_at) },
          { header: "Last activity", className: "nowrap", cell: (t) => fmtShortDateTime(t.updated_at) },
        ]}
      />
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
