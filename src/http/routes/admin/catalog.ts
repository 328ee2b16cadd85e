// The catalog's routes under /admin/v1: providers, models and plans through the catalog
// service (src/catalog/service.ts), which validates entries as the file's and audits each
// change; a provider's test call and its upstream keys' states. Registered by ./index.ts when
// the gateway has a catalog (`deps.catalog`).
import type { FastifyInstance } from "fastify";
import { modelDeployments } from "../../../config/deployments.ts";
import { GatewayError } from "../../../errors/index.ts";
import { UpstreamError } from "../../../errors/upstream-error.ts";
import { createProvider } from "../../../providers/catalog.ts";
import type { GatewayDeps } from "../../deps.ts";
import { notFound } from "../console/context.ts";
import { whole } from "./accounts.ts";
import { route } from "./contract.ts";
import { catalogOperationsByKind as byKind, operations } from "./operations.ts";

/** A test call's own bound, so a provider that never answers does not hold the request. */
const TEST_TIMEOUT_MS = 15_000;

export async function catalogRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const catalog = deps.catalog!;

  route(app, operations.getCatalog, async () => catalog.state());

  for (const kind of ["providers", "models", "plans"] as const) {
    const ops = byKind[kind];
    route(app, ops.list, async () => whole(await catalog.list(kind)));
    route(app, ops.get, async ({ id }) => {
      const entry = await catalog.get(kind, id);
      if (!entry) throw notFound(kind.replace(/s$/, ""));
      return entry;
    });
    route(app, ops.create, async ({ body, caller }) =>
      catalog.create(kind, body as Parameters<typeof catalog.create>[1], caller.actor),
    );
    route(app, ops.update, async ({ id, body, caller }) => catalog.update(kind, id, body, caller.actor));
    route(app, ops.remove, async ({ id, caller }) => {
      await catalog.remove(kind, id, caller.actor);
      return undefined;
    });
  }

  route(app, byKind.providers.keys, async ({ id }) => {
    if (!deps.config.providers.some((p) => p.id === id)) throw notFound("provider");
    // a disabled provider is not built: it has no keys in use
    const states = deps.registry.provider(id)?.keyStates?.() ?? [];
    return whole(states);
  });

  route(app, byKind.providers.test, async ({ id, body }) => {
    const config = deps.config.providers.find((p) => p.id === id);
    if (!config) throw notFound("provider");
    const model =
      body?.model ??
      deps.config.models.flatMap(modelDeployments).find((d) => d.providerId === id)?.upstreamModel;
    if (!model)
      throw new GatewayError("invalid_request", {
        message: "No model of the catalog uses this provider: give the upstream model to ask in 'model'.",
        param: "model",
      });
    // a provider of its own: the test neither waits behind nor cools the one serving calls
    const provider = createProvider(config, deps.env);
    const started = performance.now();
    try {
      await provider.complete({
        request: { model, messages: [{ role: "user", content: "Say OK." }] },
        upstreamModel: model,
        outputBound: 1,
        signal: AbortSignal.timeout(TEST_TIMEOUT_MS),
      });
      return {
        ok: true,
        latency_ms: Math.round(performance.now() - started),
        model,
        status: null,
        error: null,
      };
    } catch (err) {
      const latency_ms = Math.round(performance.now() - started);
      // UpstreamError messages are sanitised of addresses and keys; anything else is not shown
      const error =
        err instanceof UpstreamError
          ? err.message
          : err instanceof DOMException && err.name === "TimeoutError"
            ? `no answer within ${TEST_TIMEOUT_MS / 1000} seconds`
            : "the request could not be sent";
      const status = err instanceof UpstreamError ? (err.status ?? null) : null;
      return { ok: false, latency_ms, model, status, error };
    } finally {
      await provider.close();
    }
  });
}
