// Support tickets (spec 1: the ticket page) and their threads of replies. A ticket states
// what support needs to find the problem: when it happened, the key, the model, the main
// parameters, the error returned and the request id; plan upgrades, older history and extra
// exports are asked for as tickets of their own kind (spec 8).
import type { Kysely, Transaction } from "kysely";
import type { Role } from "../accounts/roles.ts";
import { newConsoleId } from "../accounts/users.ts";
import { lockRow } from "../audit/lock.ts";
import { writeAudit } from "../audit/log.ts";
import type { TicketKind, TicketStatus } from "../domain/ticket-kinds.ts";
import type { Database } from "../store/schema.ts";
import type { TicketMessageView, TicketView } from "../views/console.ts";

type Db = Kysely<Database>;

/** The most tickets one list answers, newest activity first. */
export const TICKET_LIST_LIMIT = 1000;

export interface NewTicket {
  account_id: string;
  kind: TicketKind;
  subject: string;
  description: string;
  problem_at?: number | null;
  key_id?: string | null;
  model?: string | null;
  params?: unknown;
  error?: string | null;
  request_id?: string | null;
  created_by: string;
}

function ticketQuery(db: Db) {
  return db
    .selectFrom("tickets as t")
    .leftJoin("accounts as a", "a.id", "t.account_id")
    .leftJoin("api_keys as k", "k.id", "t.key_id")
    .selectAll("t")
    .select(["a.name as account_name", "k.prefix as key_prefix"]);
}

type TicketRow = Awaited<ReturnType<ReturnType<typeof ticketQuery>["executeTakeFirstOrThrow"]>>;

function parseParams(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function asTicket(r: TicketRow): TicketView {
  return {
    id: r.id,
    account_id: r.account_id,
    account_name: r.account_name ?? null,
    kind: r.kind as TicketKind,
    subject: r.subject,
    status: r.status as TicketStatus,
    description: r.description,
    problem_at: r.problem_at === null ? null : Number(r.problem_at),
    key_id: r.key_id,
    key_prefix: r.key_prefix ?? null,
    model: r.model,
    params: parseParams(r.params),
    error: r.error,
    request_id: r.request_id,
    created_by: r.created_by,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}

export async function createTicket(db: Db, input: NewTicket): Promise<TicketView> {
  const now = Date.now();
  const id = newConsoleId("tkt");
  await db
    .insertInto("tickets")
    .values({
      id,
      account_id: input.account_id,
      kind: input.kind,
      subject: input.subject,
      status: "open",
      description: input.description,
      problem_at: input.problem_at ?? null,
      key_id: input.key_id ?? null,
      model: input.model ?? null,
      params: input.params === undefined || input.params === null ? null : JSON.stringify(input.params),
      error: input.error ?? null,
      request_id: input.request_id ?? null,
      created_by: input.created_by,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return (await getTicket(db, id))!;
}

export async function getTicket(db: Db, id: string): Promise<TicketView | undefined> {
  const row = await ticketQuery(db).where("t.id", "=", id).executeTakeFirst();
  return row && asTicket(row);
}

/** Tickets of one account (or of every account), newest activity first, TICKET_LIST_LIMIT unless `limit` says. */
export async function listTickets(
  db: Db,
  filter: { accountId?: string | undefined; status?: TicketStatus | undefined; limit?: number },
): Promise<TicketView[]> {
  let q = ticketQuery(db);
  if (filter.accountId !== undefined) q = q.where("t.account_id", "=", filter.accountId);
  if (filter.status !== undefined) q = q.where("t.status", "=", filter.status);
  const rows = await q
    .orderBy("t.updated_at", "desc")
    .orderBy("t.id", "desc")
    .limit(filter.limit ?? TICKET_LIST_LIMIT)
    .execute();
  return rows.map(asTicket);
}

// A reply through the admin API is by an admin token, whose id is its author: it shows as
// support's, as an admin's would, without an e-mail.
function messageQuery(db: Db) {
  return db
    .selectFrom("ticket_messages as m")
    .leftJoin("users as u", "u.id", "m.author_id")
    .leftJoin("admin_tokens as at", "at.id", "m.author_id")
    .select(["m.id", "u.email", "u.role", "at.id as token_id", "m.body", "m.created_at"]);
}

function asMessage(
  r: Awaited<ReturnType<ReturnType<typeof messageQuery>["executeTakeFirstOrThrow"]>>,
): TicketMessageView {
  return {
    id: r.id,
    author_email: r.email ?? null,
    author_role: (r.role as Role | null) ?? (r.token_id === null ? null : "admin"),
    body: r.body,
    created_at: Number(r.created_at),
  };
}

/** A ticket's thread, oldest first. */
export async function listMessages(db: Db, ticketId: string): Promise<TicketMessageView[]> {
  const rows = await messageQuery(db)
    .where("m.ticket_id", "=", ticketId)
    .orderBy("m.created_at")
    .orderBy("m.id")
    .execute();
  return rows.map(asMessage);
}

/** A ticket as the audit log records it: its state, not its text. */
function ticketAudit(t: { id: string; account_id: string; status: string }) {
  return { id: t.id, account_id: t.account_id, status: t.status };
}

async function ticketState(trx: Transaction<Database>, id: string) {
  return trx
    .selectFrom("tickets")
    .select(["id", "account_id", "status"])
    .where("id", "=", id)
    .executeTakeFirst();
}

/**
 * Adds a reply and moves the ticket to `status`, in one transaction. `author_id`: a user's
 * id, or an admin token's for a reply through the admin API.
 */
export async function addMessage(
  db: Db,
  input: { ticket_id: string; author_id: string; body: string; status: TicketStatus },
  actor?: string,
): Promise<TicketMessageView> {
  const now = Date.now();
  const id = newConsoleId("msg");
  await db.transaction().execute(async (trx) => {
    const before =
      actor && (await lockRow(trx, "tickets", input.ticket_id))
        ? await ticketState(trx, input.ticket_id)
        : undefined;
    await trx
      .insertInto("ticket_messages")
      .values({
        id,
        ticket_id: input.ticket_id,
        author_id: input.author_id,
        body: input.body,
        created_at: now,
      })
      .execute();
    await trx
      .updateTable("tickets")
      .set({ status: input.status, updated_at: now })
      .where("id", "=", input.ticket_id)
      .execute();
    if (actor && before)
      await writeAudit(trx, {
        actor,
        action: "reply",
        resource: "tickets",
        resourceId: input.ticket_id,
        before: ticketAudit(before),
        after: { ...ticketAudit({ ...before, status: input.status }), message_id: id },
      });
  });
  return asMessage(await messageQuery(db).where("m.id", "=", id).executeTakeFirstOrThrow());
}

export async function setTicketStatus(
  db: Db,
  id: string,
  status: TicketStatus,
  actor?: string,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const before = actor && (await lockRow(trx, "tickets", id)) ? await ticketState(trx, id) : undefined;
    await trx.updateTable("tickets").set({ status, updated_at: Date.now() }).where("id", "=", id).execute();
    if (actor && before)
      await writeAudit(trx, {
        actor,
        action: "update",
        resource: "tickets",
        resourceId: id,
        before: ticketAudit(before),
        after: ticketAudit({ ...before, status }),
      });
  });
}
