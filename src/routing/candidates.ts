// What a call may need of any of its candidates (the model's deployments and its fallbacks'),
// so its one reservation covers whichever answers.
import type { ChatRequest } from "../domain/chat-request.ts";
import type { EmbeddingRequest } from "../domain/embedding-request.ts";
import type { Deployment, ResolvedModel } from "../models/registry.ts";
import { embeddingPromptBound } from "../providers/prompt-bound.ts";
import type { NativeRequest, Provider } from "../providers/types.ts";

/** The largest prompt bound the candidates' providers state for the request, each with its model's overheads. */
export function candidatePromptBound(
  model: ResolvedModel,
  request: ChatRequest,
  native?: NativeRequest,
): number {
  let bound = 0;
  for (const m of [model, ...model.fallbacks]) {
    // Deployments of one model sharing a rule (every OpenAI-shaped adapter's) are asked once.
    const rules = new Set<Provider["promptBound"]>();
    for (const d of m.deployments) rules.add(d.provider.promptBound);
    for (const rule of rules) bound = Math.max(bound, rule(request, m.overheads, native));
  }
  return bound;
}

/** The largest input bound of an embeddings request among the model and its fallbacks, each with its overheads. */
export function candidateEmbeddingBound(model: ResolvedModel, request: EmbeddingRequest): number {
  let bound = 0;
  for (const m of [model, ...model.fallbacks])
    bound = Math.max(bound, embeddingPromptBound(request, m.overheads));
  return bound;
}

/** The largest default output bound among the model and its fallbacks. */
export function largestOutputBound(model: ResolvedModel): number {
  let bound = model.config.max_output_tokens;
  for (const f of model.fallbacks) bound = Math.max(bound, f.config.max_output_tokens);
  return bound;
}

/** Every deployment that may answer a call: the model's, then its fallbacks'. */
export function* candidates(model: ResolvedModel): Iterable<Deployment> {
  for (const m of [model, ...model.fallbacks]) yield* m.deployments;
}
