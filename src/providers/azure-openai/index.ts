import type { ProviderModule } from "../types.ts";
import { AZURE_RULES, AzureOpenAIProvider } from "./adapter.ts";
import { type AzureOpenAIConfig, azureOpenAIConfig } from "./config.ts";

export const azureOpenAI = {
  type: "azure-openai",
  priceTable: "azure",
  config: azureOpenAIConfig,
  embeddings: true,
  fieldRules: AZURE_RULES,
  create: (config: AzureOpenAIConfig, env: Record<string, string | undefined>) =>
    new AzureOpenAIProvider(config, env),
} as const satisfies ProviderModule<AzureOpenAIConfig>;
