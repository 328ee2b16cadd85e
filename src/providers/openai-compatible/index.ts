import type { ProviderModule } from "../types.ts";
import { OpenAICompatibleProvider } from "./adapter.ts";
import { type OpenAICompatibleConfig, openaiCompatibleConfig } from "./config.ts";

export const openaiCompatible = {
  type: "openai-compatible",
  priceTable: "openai",
  config: openaiCompatibleConfig,
  embeddings: true,
  create: (config: OpenAICompatibleConfig, env: Record<string, string | undefined>) =>
    new OpenAICompatibleProvider(config, env),
} as const satisfies ProviderModule<OpenAICompatibleConfig>;
