// The admin API under /admin/v1 (docs/admin-api.md): JSON, for operators' scripts and the
// console's operator pages. One hook guards every route before its body is read: an admin
// token or an admin's console session, and the scope the route needs (./auth.ts). Every
// operation is declared in ./operations.ts, which the OpenAPI document is made from.
import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../../deps.ts";
import { accountRoutes } from "./accounts.ts";
import { adminAuth } from "./auth.ts";
import { catalogRoutes } from "./catalog.ts";
import { ADMIN_PREFIX } from "./openapi.ts";
import { recordRoutes } from "./records.ts";
import { ticketRoutes } from "./tickets.ts";
import { tokenRoutes } from "./tokens.ts";

export async function adminRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  await app.register(
    async (api) => {
      api.decorateRequest("admin", null);
      api.addHook("onRequest", adminAuth(deps));
      await api.register(accountRoutes, deps);
      await api.register(recordRoutes, deps);
      await api.register(ticketRoutes, deps);
      await api.register(tokenRoutes, deps);
      if (deps.catalog) await api.register(catalogRoutes, deps);
    },
    { prefix: ADMIN_PREFIX },
  );
}
