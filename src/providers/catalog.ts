// Every provider type the gateway speaks. A new provider is a folder with its config schema
// and adapter (an index.ts exporting its ProviderModule), plus one line in this list.
import { z } from "zod";
import { anthropic } from "./anthropic/index.ts";
import { azureOpenAI } from "./azure-openai/index.ts";
import { restoringCustomCalls } from "./custom-tools.ts";
import { demo } from "./demo/index.ts";
import { gemini } from "./gemini/index.ts";
import { openaiCompatible } from "./openai-compatible/index.ts";
import type { Provider, ProviderModule } from "./types.ts";

export const PROVIDER_MODULES = [openaiCompatible, anthropic, gemini, azureOpenAI, demo] as const;

type Schemas<T extends readonly { config: unknown }[]> = { -readonly [K in keyof T]: T[K]["config"] };

/** The `providers[]` entry of the configuration: one schema per type, chosen by `type`. */
export const providerSchema = z.discriminatedUnion(
  "type",
  PROVIDER_MODULES.map((m) => m.config) as Schemas<typeof PROVIDER_MODULES>,
);
export type ProviderConfig = z.output<typeof providerSchema>;

export function createProvider(config: ProviderConfig, env: Record<string, string | undefined>): Provider {
  const module = PROVIDER_MODULES.find((m) => m.type === config.type)!;
  // The schema chose this module by the same `type`, so the config is the module's own.
  return restoringCustomCalls(module.create(config as never, env));
}

/** The price table's name for a provider type's upstream models (undefined: none). */
export function priceTableOf(type: ProviderConfig["type"]): string | undefined {
  const module: ProviderModule = PROVIDER_MODULES.find((m) => m.type === type)!;
  return module.priceTable;
}

/** Whether a provider type's adapter embeds, so embedding models may be deployed on it. */
export function embedsOf(type: ProviderConfig["type"]): boolean {
  const module: ProviderModule = PROVIDER_MODULES.find((m) => m.type === type)!;
  return module.embeddings === true;
}

/** The provider types whose adapters embed, for messages that name them. */
export const EMBEDDING_TYPES: readonly string[] = PROVIDER_MODULES.filter(
  (m: ProviderModule) => m.embeddings === true,
).map((m) => m.type);
