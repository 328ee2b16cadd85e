// Known prices: the maintained table of @pydantic/genai-prices (MIT), for models whose
// configuration has no `pricing` of its own. The table ships inside the package, so prices
// change only when the package is updated (docs/accounting.md, "Prices"), never behind the operator's
// back; the package's remote refresh is not used. The table (about 20 MB of heap) is loaded on
// the first model that needs it: a configuration that prices every model never pays for it.
import { createRequire } from "node:module";
import type { ModelPrice, TieredPrices } from "@pydantic/genai-prices";
import { flatRate, type Pricing, type Rate } from "./pricing.ts";

type Table = typeof import("@pydantic/genai-prices");
let table: Table | undefined;
function loadTable(): Table {
  table ??= createRequire(import.meta.url)("@pydantic/genai-prices") as Table;
  return table;
}

/** A rate as the table states it: a number (USD per million tokens) or a base with tiers. */
function rate(value: number | TieredPrices | undefined): Rate {
  if (value === undefined || typeof value === "number") return flatRate(value);
  return { base: value.base, tiers: [...value.tiers].sort((a, b) => a.start - b.start) };
}

/**
 * The table's prices of `upstreamModel` at `provider` (the table's provider id: "openai",
 * "anthropic", "google", "azure"), as they apply at `at`; undefined when the table does not
 * know the model there.
 */
export function tablePricing(provider: string, upstreamModel: string, at = new Date()): Pricing | undefined {
  let found: ReturnType<Table["calcPrice"]>;
  try {
    found = loadTable().calcPrice({ input_tokens: 0, output_tokens: 0 }, upstreamModel, {
      providerId: provider,
      timestamp: at,
    });
  } catch {
    return undefined;
  }
  if (!found) return undefined;
  const p: ModelPrice = found.model_price;
  return {
    source: "table",
    input: rate(p.input_mtok),
    output: rate(p.output_mtok),
    cachedInput: rate(p.cache_read_mtok),
    cacheWrite: rate(p.cache_write_mtok),
  };
}
