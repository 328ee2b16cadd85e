import type { ProviderModule } from "../types.ts";
import { AnthropicProvider } from "./adapter.ts";
import { type AnthropicConfig, anthropicConfig } from "./config.ts";

export const anthropic = {
  type: "anthropic",
  priceTable: "anthropic",
  config: anthropicConfig,
  create: (config: AnthropicConfig, env: Record<string, string | undefined>) =>
    new AnthropicProvider(config, env),
} as const satisfies ProviderModule<AnthropicConfig>;
