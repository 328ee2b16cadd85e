// What no one section of the configuration can check alone: ids unique, every provider, model
// and reviewer named where it is used exists, settings that contradict each other. Applied
// once, where the configuration is parsed (configSchema).
import type { z } from "zod";
import { EMBEDDING_TYPES, embedsOf } from "../providers/catalog.ts";
import { modelDeployments } from "./deployments.ts";
import { type Config, configSections } from "./schema.ts";

/** The whole configuration: its sections (./schema.ts), checked against each other. */
export const configSchema = configSections.superRefine(crossCheck);

export function crossCheck(cfg: Config, ctx: z.RefinementCtx): void {
  const dup = (items: { id: string }[], field: string) => {
    const seen = new Set<string>();
    items.forEach((item, i) => {
      if (seen.has(item.id))
        ctx.addIssue({ code: "custom", path: [field, i, "id"], message: `duplicate id "${item.id}"` });
      seen.add(item.id);
    });
  };
  dup(cfg.providers, "providers");
  dup(cfg.models, "models");
  dup(cfg.plans, "plans");
  const providers = new Set(cfg.providers.map((p) => p.id));
  const knownProvider = (provider: string, path: (string | number)[]) => {
    if (!providers.has(provider))
      ctx.addIssue({
        code: "custom",
        path,
        message: `unknown provider "${provider}" (providers: ${[...providers].join(", ")})`,
      });
  };
  const models = new Set(cfg.models.map((m) => m.id));
  const providerTypes = new Map(cfg.providers.map((p) => [p.id, p.type]));
  const kinds = new Map(cfg.models.map((m) => [m.id, m.kind]));
  cfg.models.forEach((m, i) => {
    // An embedding model answers through its providers' embed(): one without it could never answer.
    if (m.kind === "embedding")
      modelDeployments(m).forEach((d, j) => {
        const type = providerTypes.get(d.providerId);
        if (type !== undefined && !embedsOf(type))
          ctx.addIssue({
            code: "custom",
            path: ["models", i, ...(m.deployments ? ["deployments", j] : []), "provider"],
            message: `provider "${d.providerId}" is of type ${type}, which does not embed (embedding providers: ${EMBEDDING_TYPES.join(", ")})`,
          });
      });
    if (m.deployments) {
      if (m.provider !== undefined || m.upstream_model !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["models", i, "deployments"],
          message: "give either provider/upstream_model or deployments, not both",
        });
      const seen = new Set<string>();
      modelDeployments(m).forEach((d, j) => {
        knownProvider(d.providerId, ["models", i, "deployments", j, "provider"]);
        if (seen.has(d.id))
          ctx.addIssue({
            code: "custom",
            path: ["models", i, "deployments", j],
            message: `deployment "${d.id}" is listed twice`,
          });
        seen.add(d.id);
      });
    } else if (m.provider === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["models", i, "provider"],
        message: "a model needs a provider (or deployments)",
      });
    else knownProvider(m.provider, ["models", i, "provider"]);
    m.fallbacks.forEach((f, j) => {
      if (!models.has(f) || f === m.id)
        ctx.addIssue({
          code: "custom",
          path: ["models", i, "fallbacks", j],
          message: f === m.id ? "a model cannot be its own fallback" : `unknown model "${f}"`,
        });
      else if (kinds.get(f) !== m.kind)
        ctx.addIssue({
          code: "custom",
          path: ["models", i, "fallbacks", j],
          message: `model "${f}" is of kind ${kinds.get(f)}: a model's fallbacks must be of its own kind (${m.kind})`,
        });
    });
  });
  cfg.plans.forEach((p, i) => {
    p.models.forEach((m, j) => {
      if (!models.has(m))
        ctx.addIssue({ code: "custom", path: ["plans", i, "models", j], message: `unknown model "${m}"` });
    });
  });
  cfg.safety.reviewers.forEach((r, i) => {
    if (r.type === "model-judge" && !models.has(r.model))
      ctx.addIssue({
        code: "custom",
        path: ["safety", "reviewers", i, "model"],
        message: `unknown model "${r.model}"`,
      });
    else if (r.type === "model-judge" && kinds.get(r.model) !== "chat")
      ctx.addIssue({
        code: "custom",
        path: ["safety", "reviewers", i, "model"],
        message: `model "${r.model}" is an embedding model: a judge must be a chat model`,
      });
  });
  const safetyAnywhere = cfg.safety.enabled || cfg.plans.some((p) => p.safety.enabled);
  if (safetyAnywhere && !cfg.safety.reviewers.length)
    ctx.addIssue({
      code: "custom",
      path: ["safety", "reviewers"],
      message: "content safety is enabled, so at least one reviewer is needed",
    });
  // Node refuses a headers timeout longer than the whole request's
  if (cfg.server.headers_timeout_ms > cfg.server.request_timeout_ms)
    ctx.addIssue({
      code: "custom",
      path: ["server", "headers_timeout_ms"],
      message: "must not be longer than server.request_timeout_ms",
    });
  if (cfg.store.redis_url && !cfg.store.database_url)
    ctx.addIssue({
      code: "custom",
      path: ["store", "redis_url"],
      message: "Redis shares the ledger between instances on one PostgreSQL store: set database_url too",
    });
  if (!cfg.plans.some((p) => p.id === cfg.default_plan))
    ctx.addIssue({
      code: "custom",
      path: ["default_plan"],
      message: `no plan with id "${cfg.default_plan}"`,
    });
}
