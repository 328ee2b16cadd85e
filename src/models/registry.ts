// Builds the providers and the public models from the configuration and answers "which model
// is this, and may this plan use it" (the plans: ./plans.ts).
import { modelDeployments } from "../config/deployments.ts";
import type { Config, ModelConfig } from "../config/schema.ts";
import type { ModelKind } from "../domain/model-kinds.ts";
import { GatewayError } from "../errors/index.ts";
import { configuredPricing, type Pricing, UNPRICED } from "../prices/pricing.ts";
import { tablePricing } from "../prices/table.ts";
import { createProvider, priceTableOf } from "../providers/catalog.ts";
import type { PromptOverheads } from "../providers/prompt-bound.ts";
import type { Provider } from "../providers/types.ts";
import { Plans } from "./plans.ts";

/** One place a public model is answered from: a provider and its name for the model. */
export interface Deployment {
  /** "provider/upstream_model": what records, metrics, cooldowns and the CLI call it */
  id: string;
  providerId: string;
  /** the provider's type (`openai-compatible`, `anthropic`, …) */
  providerType: string;
  provider: Provider;
  upstreamModel: string;
  weight: number;
  /** the public model whose settings (output bound, its field) each attempt uses */
  model: ModelConfig;
  /** the provider's total timeout, where it has one: the routing of a call stays within it */
  totalMs: number | undefined;
  /** what its tokens cost: the model's configured prices, else the table's, else nothing ("unpriced") */
  pricing: Pricing;
}

export interface ResolvedModel {
  config: ModelConfig;
  /** the first deployment's: for the gateway's own calls (the safety judge), which do not route */
  upstreamModel: string;
  ownedBy: string;
  provider: Provider;
  /** never empty; one for the one-deployment shape */
  deployments: Deployment[];
  /** the models tried, in order, when every deployment failed (their own fallbacks are not) */
  fallbacks: ResolvedModel[];
  /**
   * The overheads its reservations use: the configured ones at start, grown by this instance
   * when an upstream counts more than was reserved (see CallFinisher).
   */
  overheads: PromptOverheads;
}

export class Registry {
  readonly #models = new Map<string, ResolvedModel>();
  /** the plans, each with the models it may use and its GET /v1/models answers */
  readonly plans: Plans;
  readonly #providers = new Map<string, Provider>();

  /** `created`: when each model record was first registered (see store models_seen). */
  constructor(config: Config, created: ReadonlyMap<string, number>, env: Record<string, string | undefined>) {
    const providers = new Map<
      string,
      {
        provider: Provider;
        providerType: string;
        totalMs: number | undefined;
        priceTable: string | undefined;
      }
    >();
    for (const p of config.providers) {
      if (p.disabled) continue;
      const provider = createProvider(p, env);
      providers.set(p.id, {
        provider,
        providerType: p.type,
        totalMs: "timeouts" in p ? p.timeouts.total_ms : undefined,
        priceTable: priceTableOf(p.type),
      });
      this.#providers.set(p.id, provider);
    }
    // Two models listing the same provider and upstream model name one upstream: same id,
    // one health; each keeps its own settings.
    for (const m of config.models) {
      // a disabled provider's deployments are out of service; a model left with none is not served
      const served = modelDeployments(m).filter((d) => providers.has(d.providerId));
      if (!served.length) continue;
      const deployments = served.map((d): Deployment => {
        const { provider, providerType, totalMs, priceTable } = providers.get(d.providerId)!;
        const pricing = m.pricing
          ? configuredPricing(m.pricing)
          : ((priceTable ? tablePricing(priceTable, d.upstreamModel) : undefined) ?? UNPRICED);
        return { ...d, provider, providerType, model: m, totalMs, pricing };
      });
      const first = deployments[0]!;
      this.#models.set(m.id, {
        config: m,
        upstreamModel: first.upstreamModel,
        ownedBy: m.owned_by ?? first.providerId,
        provider: first.provider,
        deployments,
        fallbacks: [],
        overheads: { ...m.prompt_overhead },
      });
    }
    for (const m of config.models) {
      const model = this.#models.get(m.id);
      if (model) model.fallbacks = m.fallbacks.flatMap((f) => this.#models.get(f) ?? []);
    }
    const plans = config.plans.map((p) => ({ ...p, models: p.models.filter((id) => this.#models.has(id)) }));
    this.plans = new Plans(plans, (id) => ({
      created: Math.floor((created.get(id) ?? 0) / 1000),
      ownedBy: this.#models.get(id)!.ownedBy,
    }));
  }

  /**
   * The model if it exists, the plan includes it, and so does the key's own list (`keyModels`;
   * null: the plan's every model). Outside the key's list answers as outside the plan: a key
   * learns nothing of the models its plan has beyond its own.
   */
  resolve(
    planId: string,
    modelId: string,
    keyModels: readonly string[] | null = null,
  ): ResolvedModel | undefined {
    if (!this.plans.includes(planId, modelId)) return undefined;
    if (keyModels !== null && !keyModels.includes(modelId)) return undefined;
    return this.#models.get(modelId);
  }

  /** Any configured model, whatever the plan: for the gateway's own calls (the safety judge). */
  model(modelId: string): ResolvedModel | undefined {
    return this.#models.get(modelId);
  }

  /** A provider in service (not disabled), by id: its upstream keys' states for the dashboard. */
  provider(id: string): Provider | undefined {
    return this.#providers.get(id);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#providers.values()].map((p) => p.close()));
  }
}

/** Which API serves a model of each kind, as a refusal tells the client. */
const SERVED_BY: Record<ModelKind, string> = {
  chat: "a chat API (POST /v1/chat/completions, /v1/messages or /v1/responses)",
  embedding: "POST /v1/embeddings",
};

/**
 * The refusal of `model` by an API that serves the other kind: the model exists and the plan
 * may include it, so it is not model_not_found; the client sent it to the wrong place.
 */
export function wrongModelKind(modelId: string, kind: ModelKind): GatewayError {
  return new GatewayError("wrong_model_kind", {
    message: `The model '${modelId}' is ${kind === "chat" ? "a chat" : "an embedding"} model: call it through ${SERVED_BY[kind]}.`,
    param: "model",
  });
}
