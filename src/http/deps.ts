import type { Logger } from "pino";
import type { KeyCache } from "../auth/key-cache.ts";
import type { CatalogService } from "../catalog/types.ts";
import type { Config } from "../config/schema.ts";
import type { Ledger } from "../ledger/types.ts";
import type { Registry } from "../models/registry.ts";
import type { Metrics } from "../observability/metrics.ts";
import type { Tracing } from "../observability/tracing.ts";
import type { RateLimits } from "../rate-limits/rate-limiter.ts";
import type { RecordWriter } from "../records/writer.ts";
import type { CallFinisher } from "../relay/finish.ts";
import type { Relay } from "../relay/relay.ts";
import type { Store } from "../store/db.ts";
import type { ReadinessAnswer } from "./readiness.ts";

/**
 * Everything the HTTP layer uses; built by server.ts, replaced piecewise in tests. `config`
 * and `registry` are the newest a configuration reload made (src/relay/settings.ts): read
 * them where they are used, not once for later.
 */
export interface GatewayDeps {
  config: Config;
  store: Store;
  registry: Registry;
  ledger: Ledger;
  rates: RateLimits;
  keys: KeyCache;
  records: RecordWriter;
  relay: Relay;
  finisher: CallFinisher;
  metrics: Metrics;
  /** traces of calls: NO_TRACING unless `tracing.enabled` */
  tracing: Tracing;
  logger: Logger;
  /** the environment the gateway was started with: where providers read their keys */
  env: Record<string, string | undefined>;
  /** the bearer token GET /metrics requires (from metrics.token_env); none: open */
  metricsToken?: string | undefined;
  /** the providers, models and plans as the admin API reads and changes them */
  catalog?: CatalogService | undefined;
  /** true once shutdown began: new requests get 503 */
  isClosing(): boolean;
  /** what GET /readyz answers */
  readiness(): Promise<ReadinessAnswer>;
}
