// Every account's support tickets through the admin API (src/tickets/): read, set a status,
// reply as support. A reply's author is the caller: an admin token shows as support's, as an
// admin's own reply does.
import type { FastifyInstance } from "fastify";
import {
  addMessage,
  getTicket,
  listMessages,
  listTickets,
  setTicketStatus,
  TICKET_LIST_LIMIT,
} from "../../../tickets/repository.ts";
import type { TicketView } from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import { idParam, notFound } from "../console/context.ts";
import { route } from "./contract.ts";
import { operations as ops } from "./operations.ts";

export async function ticketRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const db = deps.store.db;

  async function ticketOf(id: string): Promise<TicketView> {
    const ticket = idParam.safeParse(id).success ? await getTicket(db, id) : undefined;
    if (!ticket) throw notFound("ticket");
    return ticket;
  }

  route(app, ops.listTickets, async ({ query }) => {
    const rows = await listTickets(db, {
      accountId: query.account,
      status: query.status,
      limit: TICKET_LIST_LIMIT + 1,
    });
    return {
      object: "list" as const,
      data: rows.slice(0, TICKET_LIST_LIMIT),
      has_more: rows.length > TICKET_LIST_LIMIT,
      next_cursor: null,
    };
  });

  route(app, ops.getTicket, async ({ id }) => {
    const ticket = await ticketOf(id);
    return { ...ticket, messages: await listMessages(db, ticket.id) };
  });

  route(app, ops.updateTicket, async ({ id, body, caller }) => {
    const ticket = await ticketOf(id);
    await setTicketStatus(db, ticket.id, body.status, caller.actor);
    return ticketOf(ticket.id);
  });

  route(app, ops.replyToTicket, async ({ id, body, caller }) => {
    const ticket = await ticketOf(id);
    return addMessage(
      db,
      { ticket_id: ticket.id, author_id: caller.authorId, body: body.body, status: "answered" },
      caller.actor,
    );
  });
}
