// Known prices: the maintained table of @pydantic/genai-prices (MIT), for models whose
// configuration has no `pricing` of its own. The table ships inside the package, so prices
// change only when the package is updated (docs/accounting.md, "Prices"), never behind the operator's
// back; the package's remote refresh is not used.
//
// The table is read only while a registry is built (at start-up and at each reload), which
// prices its models in one go. So it is loaded by the first model that needs it and dropped on
// the next turn of the event loop: kept, it held about 3 MB of heap for lookups that never came
// again (decision 0042; what compiling so large a module touched, 4 MB of malloc's and 3 MB of
// the binary's pages, stays either way). A configuration that prices every model never loads
// it; a reload loads it again (about 60 ms).
import { createRequire } from "node:module";
import type { ModelPrice, TieredPrices } from "@pydantic/genai-prices";
import { flatRate, type Pricing, type Rate } from "./pricing.ts";

type Table = typeof import("@pydantic/genai-prices");
let table: Table | undefined;

function loadTable(): Table {
  if (table) return table;
  // a require of its own, so that nothing this module keeps holds the table once dropped (a
  // require's module is the table's parent, and a parent keeps its children)
  const require = createRequire(import.meta.url);
  // the package named in full: test/runtime-deps.test.ts reads what the gateway loads
  const file = require.resolve("@pydantic/genai-prices");
  table = require("@pydantic/genai-prices") as Table;
  setImmediate(() => {
    table = undefined;
    delete require.cache[file];
  });
  return table;
}

/** Whether the table is in memory now (its tests). */
export function tableLoaded(): boolean {
  return table !== undefined;
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
