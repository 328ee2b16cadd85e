import type { ProviderModule } from "../types.ts";
import { DemoProvider } from "./adapter.ts";
import { type DemoConfig, demoConfig } from "./config.ts";

export const demo = {
  type: "demo",
  config: demoConfig,
  embeddings: true,
  create: (config: DemoConfig) => new DemoProvider(config.id),
} as const satisfies ProviderModule<DemoConfig>;
