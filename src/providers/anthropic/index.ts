import type { ProviderModule } from "../types.ts";
import { AnthropicProvider } from "./adapter.ts";
import { type AnthropicConfig, anthropicConfig } from "./config.ts";
import { ANTHROPIC_RULES } from "./request.ts";

export const anthropic = {
  type: "anthropic",
  priceTable: "anthropic",
  config: anthropicConfig,
  fieldRules: ANTHROPIC_RULES,
  create: (config: AnthropicConfig, env: Record<string, string | undefined>) =>
    new AnthropicProvider(config, env),
} as const satisfies ProviderModule<AnthropicConfig>;
