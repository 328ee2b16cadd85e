// Who calls the admin API, and whether they may: an admin token (`Authorization: Bearer
// gwadmin-…`, looked up in the store on every call, so a revoked token stops on every
// instance at once) or the console session of a user with the role admin, which is scope
// `full` and lets the console's operator pages call the API directly. A session travels in a
// cookie the browser sends by itself, so those calls get the console API's guards: a Host the
// gateway answers to, and the gateway's own Origin on every change.
import type { FastifyReply, FastifyRequest } from "fastify";
import { type AdminScope, resolveAdminToken, scopeAllows } from "../../../accounts/admin-tokens.ts";
import { parseBearer } from "../../../accounts/key-format.ts";
import { readCookie, resolveSession, SESSION_COOKIE } from "../../../auth/sessions.ts";
import { GatewayError } from "../../../errors/index.ts";
import type { GatewayDeps } from "../../deps.ts";
import { hostChecker, STATE_CHANGING, sameOrigin } from "../console/index.ts";

export interface AdminCaller {
  /** what the audit log names: "token:<id>" or "user:<e-mail>" */
  actor: string;
  scopes: readonly AdminScope[];
  /** the admin token's id, or the console user's: a ticket reply's author */
  authorId: string;
  /** the console user of a session; undefined for a token */
  userId: string | undefined;
}

declare module "fastify" {
  interface FastifyRequest {
    /** the admin API's caller, once its hook passed */
    admin: AdminCaller | null;
  }
  interface FastifyContextConfig {
    /** what an admin API route needs (src/http/routes/admin/contract.ts sets it) */
    adminScope?: AdminScope;
  }
}

/** The admin API's onRequest hook: before the body is read, the caller and their scope. */
export function adminAuth(deps: GatewayDeps) {
  const hostAllowed = hostChecker(deps.config.server.host, deps.config.server.allowed_hosts);

  async function caller(request: FastifyRequest): Promise<AdminCaller> {
    const bearer = parseBearer(request.headers.authorization);
    if (bearer.kind === "token") {
      const token = await resolveAdminToken(deps.store.db, bearer.token);
      if (!token) throw new GatewayError("admin_unauthenticated");
      return { actor: `token:${token.id}`, scopes: token.scopes, authorId: token.id, userId: undefined };
    }
    const cookie = readCookie(request.headers.cookie, SESSION_COOKIE);
    if (cookie === undefined) throw new GatewayError("admin_unauthenticated");
    if (!hostAllowed(request.headers.host)) throw new GatewayError("host_not_allowed");
    if (STATE_CHANGING.has(request.method) && !sameOrigin(request)) throw new GatewayError("origin_mismatch");
    const user = await resolveSession(deps.store.db, cookie);
    if (!user) throw new GatewayError("admin_unauthenticated");
    if (user.role !== "admin")
      throw new GatewayError("admin_forbidden", {
        message: "Only the console's admins may call the admin API.",
      });
    return { actor: `user:${user.email}`, scopes: ["full"], authorId: user.id, userId: user.id };
  }

  return async function adminHook(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // answers carry every account's data: no shared cache may keep them
    reply.header("cache-control", "no-store");
    const found = await caller(request);
    // a route that names none changes something: only `full` may, until it says what it needs
    const need =
      request.routeOptions.config?.adminScope ??
      (request.method === "GET" || request.method === "HEAD" ? "read" : "full");
    if (!scopeAllows(found.scopes, need))
      throw new GatewayError("admin_forbidden", {
        message: `This admin token's scopes (${found.scopes.join(", ")}) do not allow this; it needs ${need === "read" ? "any scope" : `the scope ${need} or full`}.`,
      });
    request.admin = found;
  };
}

/** The caller the hook found; every admin route runs after it. */
export function callerOf(request: FastifyRequest): AdminCaller {
  if (!request.admin) throw new GatewayError("admin_unauthenticated");
  return request.admin;
}
