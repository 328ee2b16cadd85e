// Support tickets: members open and reply to their account's tickets, owners also close
// them, admins see and answer every account's. A reply by an admin marks the ticket
// answered; a reply by anyone else (re)opens it.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { User } from "../../../accounts/users.ts";
import { TICKET_KINDS, TICKET_STATUSES } from "../../../domain/ticket-kinds.ts";
import { GatewayError } from "../../../errors/index.ts";
import { accountHasKey, requestOfOtherAccount } from "../../../records/queries.ts";
import {
  addMessage,
  createTicket,
  getTicket,
  listMessages,
  listTickets,
  setTicketStatus,
} from "../../../tickets/repository.ts";
import type { List, MessageAnswer, TicketAnswer, TicketThread, TicketView } from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import {
  accountFor,
  accountQuery,
  forbidden,
  idParam,
  notFound,
  parseInput,
  userActor,
  userOf,
} from "./context.ts";

const listQuery = z.object({ ...accountQuery, status: z.enum(TICKET_STATUSES).optional() }).strict();
const scopeQuery = z.object(accountQuery).strict();
const noQuery = z.object({}).strict();
const ticketPath = z.object({ id: z.string() }).strict();

/** Text fields: trimmed, and bounded so one ticket cannot fill the store. */
const text = (max: number) => z.string().trim().min(1).max(max);

const createBody = z
  .object({
    kind: z.enum(TICKET_KINDS),
    subject: text(200),
    description: text(20_000),
    problem_at: z.number().int().nonnegative().max(8_640_000_000_000_000).nullable().optional(),
    key_id: idParam.nullable().optional(),
    model: z.string().max(200).nullable().optional(),
    // the record's parameters as an object, or what the reporter typed
    params: z
      .union([z.record(z.string(), z.unknown()), z.string().max(4_000)])
      .nullable()
      .optional()
      .refine((p) => p === undefined || p === null || JSON.stringify(p).length <= 4_000, {
        message: "must be at most 4000 characters as JSON",
      }),
    error: z.string().max(10_000).nullable().optional(),
    request_id: idParam.nullable().optional(),
  })
  .strict();

const messageBody = z.object({ body: text(20_000) }).strict();
const patchBody = z.object({ status: z.enum(TICKET_STATUSES) }).strict();

export async function ticketRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  /** The ticket if the user may see it: their account's, or any for an admin. */
  async function ticketFor(user: User, id: string): Promise<TicketView> {
    const ticket = idParam.safeParse(id).success ? await getTicket(deps.store.db, id) : undefined;
    if (!ticket || (user.role !== "admin" && ticket.account_id !== user.account_id)) throw notFound("ticket");
    return ticket;
  }

  app.get("/tickets", async (request): Promise<List<TicketView>> => {
    const q = parseInput(listQuery, request.query, "query");
    const user = userOf(request);
    // admins see every account's tickets unless they name one
    const accountId =
      user.role === "admin" && q.account === undefined
        ? undefined
        : (await accountFor(deps, user, q.account)).id;
    return { data: await listTickets(deps.store.db, { accountId, status: q.status }) };
  });

  app.post("/tickets", async (request, reply) => {
    const q = parseInput(scopeQuery, request.query, "query");
    const user = userOf(request);
    const account = await accountFor(deps, user, q.account);
    const body = parseInput(createBody, request.body, "body");
    if (body.key_id && !(await accountHasKey(deps.store.db, account.id, body.key_id)))
      throw new GatewayError("invalid_request", {
        message: "Invalid parameter 'key_id': no such key in this account.",
        param: "key_id",
      });
    // another account's request would show its owner's call to whoever answers the ticket
    if (body.request_id && (await requestOfOtherAccount(deps.store.db, account.id, body.request_id)))
      throw new GatewayError("invalid_request", {
        message: "Invalid parameter 'request_id': no such request in this account.",
        param: "request_id",
      });
    const ticket = await createTicket(deps.store.db, {
      ...body,
      account_id: account.id,
      created_by: user.id,
    });
    return reply.code(201).send({ ticket } satisfies TicketAnswer);
  });

  app.get("/tickets/:id", async (request): Promise<TicketThread> => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(ticketPath, request.params, "query");
    const ticket = await ticketFor(userOf(request), id);
    return { ticket, messages: await listMessages(deps.store.db, ticket.id) };
  });

  app.post("/tickets/:id/messages", async (request, reply) => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(ticketPath, request.params, "query");
    const user = userOf(request);
    const ticket = await ticketFor(user, id);
    const body = parseInput(messageBody, request.body, "body");
    // an admin's reply is support's, audited as the admin API's are; a member's is not
    const message = await addMessage(
      deps.store.db,
      {
        ticket_id: ticket.id,
        author_id: user.id,
        body: body.body,
        status: user.role === "admin" ? "answered" : "open",
      },
      user.role === "admin" ? userActor(request) : undefined,
    );
    return reply.code(201).send({ message } satisfies MessageAnswer);
  });

  app.patch("/tickets/:id", async (request): Promise<TicketAnswer> => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(ticketPath, request.params, "query");
    const user = userOf(request);
    const ticket = await ticketFor(user, id);
    const body = parseInput(patchBody, request.body, "body");
    if (user.role === "member")
      throw forbidden("Only the account's owners (and admins) may change a ticket.");
    if (user.role === "owner" && body.status !== "closed")
      throw forbidden("Owners may close a ticket; a reply reopens it.");
    await setTicketStatus(deps.store.db, ticket.id, body.status, userActor(request));
    return { ticket: (await getTicket(deps.store.db, ticket.id))! };
  });
}
