// The admin API's own tokens, the audit log, and the OpenAPI document.
import type { FastifyInstance } from "fastify";
import {
  type AdminToken,
  createAdminToken,
  listAdminTokens,
  revokeAdminToken,
} from "../../../accounts/admin-tokens.ts";
import { listAudit } from "../../../audit/log.ts";
import { VERSION } from "../../../observability/metrics.ts";
import { encodeCursor } from "../../../records/queries.ts";
import type { AdminTokenView } from "../../../views/admin.ts";
import type { GatewayDeps } from "../../deps.ts";
import { idParam, notFound } from "../console/context.ts";
import { whole } from "./accounts.ts";
import { route } from "./contract.ts";
import { openApiJson } from "./openapi.ts";
import { operations as ops } from "./operations.ts";
import { AUDIT_DEFAULT_LIMIT } from "./schemas.ts";

function tokenView(t: AdminToken): AdminTokenView {
  return {
    id: t.id,
    name: t.name,
    prefix: t.prefix,
    scopes: t.scopes,
    created_by: t.created_by,
    created_at: t.created_at,
    last_used_at: t.last_used_at,
    revoked_at: t.revoked_at,
  };
}

export async function tokenRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const db = deps.store.db;

  route(app, ops.getOpenApi, async ({ reply }) => reply.type("application/json").send(openApiJson(VERSION)));

  route(app, ops.listAdminTokens, async () => whole((await listAdminTokens(db)).map(tokenView)));

  route(app, ops.createAdminToken, async ({ body, caller }) => {
    const { token, secret } = await createAdminToken(db, body, caller.actor);
    return { ...tokenView(token), secret };
  });

  route(app, ops.revokeAdminToken, async ({ id, caller }) => {
    const token = idParam.safeParse(id).success ? await revokeAdminToken(db, id, caller.actor) : undefined;
    if (!token) throw notFound("admin token");
    return tokenView(token);
  });

  route(app, ops.listAuditLog, async ({ query }) => {
    const limit = query.limit ?? AUDIT_DEFAULT_LIMIT;
    const rows = await listAudit(db, {
      resource: query.resource,
      resourceId: query.resource_id,
      actor: query.actor,
      from: query.from,
      to: query.to,
      limit: limit + 1,
      before: query.cursor && { createdAt: query.cursor.created_at, id: query.cursor.request_id },
    });
    const data = rows.slice(0, limit);
    const last = data.at(-1);
    return {
      object: "list" as const,
      data,
      has_more: rows.length > limit,
      next_cursor:
        rows.length > limit && last
          ? encodeCursor({ created_at: last.created_at, request_id: last.id })
          : null,
    };
  });
}
