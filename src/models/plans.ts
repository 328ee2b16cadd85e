// The plans: which public models each may use, and the answers of GET /v1/models, built once
// per configuration rather than per request.
import type { PlanConfig } from "../config/schema.ts";

export interface ModelObject {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

export class Plans {
  readonly #plans = new Map<
    string,
    { plan: PlanConfig; allowed: Set<string>; list: string; objects: Map<string, string> }
  >();

  /** `describe`: a model's creation time (seconds) and owner, as GET /v1/models shows them */
  constructor(
    plans: readonly PlanConfig[],
    describe: (modelId: string) => { created: number; ownedBy: string },
  ) {
    for (const plan of plans) {
      const data: ModelObject[] = plan.models.map((id) => {
        const { created, ownedBy } = describe(id);
        return { id, object: "model", created, owned_by: ownedBy };
      });
      // Serialised once: GET /v1/models answers the same bytes to every caller of a plan.
      this.#plans.set(plan.id, {
        plan,
        allowed: new Set(plan.models),
        list: JSON.stringify({ object: "list", data }),
        objects: new Map(data.map((m) => [m.id, JSON.stringify(m)])),
      });
    }
  }

  get(planId: string): PlanConfig | undefined {
    return this.#plans.get(planId)?.plan;
  }

  /** Whether the plan may use the model. */
  includes(planId: string, modelId: string): boolean {
    return this.#plans.get(planId)?.allowed.has(modelId) ?? false;
  }

  /**
   * The JSON body of GET /v1/models for a plan, within a key's own list of models (null: the
   * plan's every model, the answer serialised once).
   */
  modelListJson(planId: string, keyModels: readonly string[] | null = null): string {
    const plan = this.#plans.get(planId);
    if (!plan) return '{"object":"list","data":[]}';
    if (keyModels === null) return plan.list;
    const data = [...plan.objects].filter(([id]) => keyModels.includes(id)).map(([, json]) => json);
    return `{"object":"list","data":[${data.join(",")}]}`;
  }

  /** The JSON body of GET /v1/models/{model}: the model object, if the plan (and the key's list) includes it. */
  modelJson(planId: string, modelId: string, keyModels: readonly string[] | null = null): string | undefined {
    if (keyModels !== null && !keyModels.includes(modelId)) return undefined;
    return this.#plans.get(planId)?.objects.get(modelId);
  }
}
