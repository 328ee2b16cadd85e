// A model's deployments as configured, named as records, metrics, cooldowns and the CLI name
// them. Kept apart from the registry so the CLI reads them without building providers.

/** What of a model's configuration (./schema.ts) names its deployments. */
export interface ModelDeployments {
  id: string;
  provider?: string | undefined;
  upstream_model?: string | undefined;
  deployments?:
    | ReadonlyArray<{ provider: string; upstream_model?: string | undefined; weight: number }>
    | undefined;
}

export interface ConfiguredDeployment {
  /** "provider/upstream_model" */
  id: string;
  providerId: string;
  upstreamModel: string;
  weight: number;
}

/** The one-deployment shape (provider/upstream_model) is a model with one deployment. */
export function modelDeployments(m: ModelDeployments): ConfiguredDeployment[] {
  const listed = m.deployments ?? [{ provider: m.provider!, upstream_model: m.upstream_model, weight: 1 }];
  return listed.map((d) => {
    const upstreamModel = d.upstream_model ?? m.id;
    return { id: `${d.provider}/${upstreamModel}`, providerId: d.provider, upstreamModel, weight: d.weight };
  });
}
