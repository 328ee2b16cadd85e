// Builds the configured reviewer chain, in the configured order. Everything a reviewer needs
// from outside (the judge's model, the moderation key) is checked before anything is built,
// so a bad configuration fails at start with a clear message and leaves nothing open.
import type { ReviewerConfig } from "../../config/schema.ts";
import type { Registry } from "../../models/registry.ts";
import type { Reviewer } from "../types.ts";
import { ModelJudgeReviewer } from "./model-judge.ts";
import { ModerationApiReviewer } from "./moderation-api.ts";
import { RulesReviewer } from "./rules.ts";

export interface ReviewerDeps {
  registry: Registry;
  env: Record<string, string | undefined>;
}

export function buildReviewers(configs: readonly ReviewerConfig[], deps: ReviewerDeps): Reviewer[] {
  configs.forEach((config, i) => {
    const where = `safety.reviewers[${i}] (${config.type})`;
    if (config.type === "model-judge" && !deps.registry.model(config.model))
      throw new Error(`${where}: unknown model "${config.model}"`);
    if (config.type === "moderation-api" && config.api_key_env !== undefined && !deps.env[config.api_key_env])
      throw new Error(`${where}: the environment variable ${config.api_key_env} (api_key_env) is not set`);
  });
  const built: Reviewer[] = [];
  configs.forEach((config, i) => {
    try {
      built.push(build(config, deps));
    } catch (err) {
      // Only the rules reviewer can still fail here (a term that normalises to nothing).
      void closeReviewers(built);
      throw new Error(`safety.reviewers[${i}] (${config.type}): ${(err as Error).message}`);
    }
  });
  return built;
}

function build(config: ReviewerConfig, deps: ReviewerDeps): Reviewer {
  switch (config.type) {
    case "rules":
      return new RulesReviewer(config);
    case "moderation-api":
      return new ModerationApiReviewer(config, deps.env);
    case "model-judge":
      return new ModelJudgeReviewer(deps.registry.model(config.model)!);
  }
}

/** Closes every reviewer that holds something (the moderation reviewer's connections). */
export async function closeReviewers(reviewers: readonly Reviewer[]): Promise<void> {
  await Promise.all(reviewers.map((reviewer) => reviewer.close?.()));
}
