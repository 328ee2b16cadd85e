// Resolved models and providers for unit tests of the relay and the routing, without a
// registry: providers whose answers the test supplies, and models over them with the
// configuration's defaults.

import { type ConfigInput, modelSchema } from "../../src/config/schema.ts";
import type { Chunk, Completion } from "../../src/domain/completion.ts";
import type { Deployment, ResolvedModel } from "../../src/models/registry.ts";
import { configuredPricing, UNPRICED } from "../../src/prices/pricing.ts";
import { DEFAULT_PROMPT_OVERHEADS } from "../../src/providers/prompt-bound.ts";
import type { Provider, UpstreamCall } from "../../src/providers/types.ts";

/** A provider whose answers the test supplies; anything else it is asked rejects. */
export function fakeProvider(
  answers: {
    id?: string;
    complete?: (call: UpstreamCall) => Promise<Completion>;
    stream?: (call: UpstreamCall) => AsyncIterable<Chunk>;
    promptBound?: Provider["promptBound"];
  } = {},
): Provider {
  return {
    id: answers.id ?? "fake",
    promptBound: answers.promptBound ?? (() => 1),
    complete: answers.complete ?? (() => Promise.reject(new Error("not expected"))),
    stream:
      answers.stream ??
      (() => {
        throw new Error("not expected");
      }),
    close: async () => {},
  };
}

export interface TestDeployment {
  /** the provider id; the deployment's id is `${providerId}/${upstreamModel}` */
  providerId: string;
  provider?: Provider;
  upstreamModel?: string;
  weight?: number;
  totalMs?: number;
}

/** A model over the given deployments, its settings from `fields` and the schema's defaults. */
export function testModel(
  fields: Omit<ConfigInput["models"][number], "provider" | "deployments"> & { id: string },
  deployments: TestDeployment[],
  fallbacks: ResolvedModel[] = [],
): ResolvedModel {
  const config = modelSchema.parse({
    ...fields,
    deployments: deployments.map((d) => ({
      provider: d.providerId,
      upstream_model: d.upstreamModel,
      weight: d.weight,
    })),
  });
  const resolved: Deployment[] = deployments.map((d) => {
    const upstreamModel = d.upstreamModel ?? fields.id;
    return {
      id: `${d.providerId}/${upstreamModel}`,
      providerId: d.providerId,
      providerType: "openai-compatible",
      provider: d.provider ?? fakeProvider({ id: d.providerId }),
      upstreamModel,
      weight: d.weight ?? 1,
      model: config,
      totalMs: d.totalMs,
      pricing: config.pricing ? configuredPricing(config.pricing) : UNPRICED,
    };
  });
  return {
    config,
    upstreamModel: resolved[0]!.upstreamModel,
    ownedBy: resolved[0]!.providerId,
    provider: resolved[0]!.provider,
    overheads: { ...DEFAULT_PROMPT_OVERHEADS },
    deployments: resolved,
    fallbacks,
  };
}
