import type { ProviderModule } from "../types.ts";
import { AzureOpenAIProvider } from "./adapter.ts";
import { type AzureOpenAIConfig, azureOpenAIConfig } from "./config.ts";

export const azureOpenAI = {
  type: "azure-openai",
  priceTable: "azure",
  config: azureOpenAIConfig,
  create: (config: AzureOpenAIConfig, env: Record<string, string | undefined>) =>
    new AzureOpenAIProvider(config, env),
} as const satisfies ProviderModule<AzureOpenAIConfig>;
