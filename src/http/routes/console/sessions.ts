// An account's agent sessions (docs/console-api.md; not the console's login sessions of
// ./session.ts): the list, newest activity first in keyset pages, one session with its calls
// in the order they were made, and the export of those calls as CSV or JSON Lines (the
// records' columns).
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { SESSION_ID } from "../../../domain/sessions.ts";
import { EXPORT_CONTENT_TYPES, exportText } from "../../../records/export.ts";
import { accountHasKey, decodeCursor, encodeCursor, RECORD_FIELDS } from "../../../records/queries.ts";
import {
  decodeSessionCursor,
  encodeSessionCursor,
  exportSession,
  findSession,
  listSessions,
  sessionCalls,
} from "../../../records/sessions.ts";
import type { SessionCallsAnswer, SessionsAnswer } from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import { accountFor, accountQuery, idParam, notFound, parseInput, queryInt, userOf } from "./context.ts";

const DEFAULT_SESSIONS = 50;
const DEFAULT_CALLS = 100;

/** A cursor query parameter this API returned, decoded. */
function cursor<T>(decode: (text: string) => T | undefined) {
  return z.string().transform((text, ctx) => {
    const c = decode(text);
    if (c === undefined) {
      ctx.addIssue({ code: "custom", message: "is not a cursor this API returned" });
      return z.NEVER;
    }
    return c;
  });
}

const listQuery = z
  .object({
    ...accountQuery,
    key: idParam.optional(),
    limit: queryInt(1, 200).optional(),
    before: cursor(decodeSessionCursor).optional(),
  })
  .strict();
const callsQuery = z
  .object({ ...accountQuery, limit: queryInt(1, 500).optional(), after: cursor(decodeCursor).optional() })
  .strict();
const exportQuery = z.object({ ...accountQuery, format: z.enum(["csv", "jsonl"]).default("csv") }).strict();
const sessionPath = z.object({ id: z.string().regex(SESSION_ID, "is not a session id") }).strict();

export async function agentSessionRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const db = deps.store.db;

  app.get("/sessions", async (request): Promise<SessionsAnswer> => {
    const q = parseInput(listQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), q.account);
    if (q.key !== undefined && !(await accountHasKey(db, account.id, q.key))) throw notFound("key", "key");
    const { data, next } = await listSessions(
      db,
      { accountId: account.id, keyId: q.key },
      { limit: q.limit ?? DEFAULT_SESSIONS, before: q.before },
    );
    return { data, next_before: next && encodeSessionCursor(next) };
  });

  /** The account's session of the path, or not_found (another account's too: ids cannot be probed). */
  async function sessionOf(accountId: string, params: unknown) {
    const path = sessionPath.safeParse(params);
    const session = path.success ? await findSession(db, accountId, path.data.id) : undefined;
    if (!session) throw notFound("session");
    return session;
  }

  app.get("/sessions/:id", async (request): Promise<SessionCallsAnswer> => {
    const q = parseInput(callsQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), q.account);
    const session = await sessionOf(account.id, request.params);
    const { data, next } = await sessionCalls(db, account.id, session.session_id, {
      limit: q.limit ?? DEFAULT_CALLS,
      after: q.after,
    });
    return { session, data, next_after: next && encodeCursor(next) };
  });

  app.get("/sessions/:id/export", async (request, reply) => {
    const q = parseInput(exportQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), q.account);
    const session = await sessionOf(account.id, request.params);
    const text = await exportText(exportSession(db, account.id, session.session_id), q.format, RECORD_FIELDS);
    // the id's characters are safe in a header (SESSION_ID); a long one is cut for the file's name
    const filename = `session-${session.session_id.slice(0, 64).replaceAll(":", "-")}.${q.format}`;
    return reply
      .header("content-type", EXPORT_CONTENT_TYPES[q.format])
      .header("content-disposition", `attachment; filename="${filename}"`)
      .send(Readable.from(text, { objectMode: false, highWaterMark: 64 * 1024 }));
  });
}
