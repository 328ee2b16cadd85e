import { TicketList } from "../Tickets.tsx";

/** Every account's tickets: the tickets page's list, which shows admins all of them. */
export function TicketsTab() {
  return (
    <section className="card section" aria-label="All tickets">
      <TicketList basePath="/admin/tickets" />
    </section>
  );
}
