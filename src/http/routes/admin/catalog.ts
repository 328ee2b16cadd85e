// The catalog's routes under /admin/v1 (providers, models, plans): the registration point for
// the routes of the catalog service (src/catalog/), registered by ./index.ts when the gateway
// has one (`deps.catalog`). Each implements its operation in ./operations.ts
// (`catalogOperationsByKind`) with `route()` of ./contract.ts, which gives it its scope
// (`catalog` for changes) and validates its input; the OpenAPI document already describes
// them, a provider's test (`testProvider`) and its upstream keys' states (`listProviderKeys`)
// among them.
import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../../deps.ts";

export async function catalogRoutes(_app: FastifyInstance, _deps: GatewayDeps): Promise<void> {}
