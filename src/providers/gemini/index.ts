import type { ProviderModule } from "../types.ts";
import { GeminiProvider } from "./adapter.ts";
import { type GeminiConfig, geminiConfig } from "./config.ts";
import { GEMINI_RULES } from "./request.ts";

export const gemini = {
  type: "gemini",
  priceTable: "google",
  config: geminiConfig,
  embeddings: true,
  fieldRules: GEMINI_RULES,
  create: (config: GeminiConfig, env: Record<string, string | undefined>) => new GeminiProvider(config, env),
} as const satisfies ProviderModule<GeminiConfig>;
