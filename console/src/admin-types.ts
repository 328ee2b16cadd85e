// The admin API's shapes (/admin/v1), as the console reads them: the server's own
// (src/views/admin.ts and the vocabularies it names) where they are the same, so the two
// cannot drift apart; the catalog's entries and the forms' shapes are the console's.
import type { AdminKeyView } from "./types.ts";

export { ADMIN_SCOPES, type AdminScope } from "../../src/accounts/admin-scopes.ts";
export { USAGE_GROUPS, type UsageGroup } from "../../src/domain/usage-groups.ts";
export type {
  AdminRecordView,
  AdminTokenCreated,
  AdminTokenView,
  AuditEntryView,
} from "../../src/views/admin.ts";

/** Every list of the admin API. */
export interface AdminList<T> {
  object: "list";
  data: T[];
  has_more: boolean;
  /** pass back as `cursor` for the next page; null at the end */
  next_cursor: string | null;
}

/** GET /admin/v1/catalog: where providers, models and plans are managed */
export interface CatalogState {
  /** "file": the configuration file's, read-only here; "store": edited through the admin API */
  source: "file" | "store";
  revision: number;
}

export const CATALOG_KINDS = ["providers", "models", "plans"] as const;
export type CatalogKind = (typeof CATALOG_KINDS)[number];

export const PROVIDER_TYPES = ["openai-compatible", "anthropic", "gemini", "azure-openai", "demo"] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

/**
 * A catalog entry as the configuration file writes it: the fields of docs/configuration.md,
 * `id` among them. The named fields are the ones the console's forms edit; the JSON editor
 * edits the rest.
 */
export type CatalogEntry = Record<string, unknown> & { id: string };

export interface ProviderEntry extends CatalogEntry {
  type: ProviderType;
  base_url?: string;
  api_key_env?: string;
  api_keys_env?: string[];
  /** literal upstream keys; the API shows them masked ("…abcd"), and a PATCH without them keeps them */
  api_keys?: string[];
  headers?: Record<string, string>;
  timeouts?: Record<string, number>;
  disabled?: boolean;
}

export interface Deployment {
  provider: string;
  upstream_model?: string;
  weight?: number;
}

/** USD per million tokens */
export interface Pricing {
  input?: number;
  output?: number;
  cached_input?: number;
  cache_write?: number;
}

export const ROUTINGS = ["weighted", "ordered", "least-busy", "latency"] as const;

export interface ModelEntry extends CatalogEntry {
  provider?: string;
  upstream_model?: string;
  deployments?: Deployment[];
  routing?: (typeof ROUTINGS)[number];
  fallbacks?: string[];
  pricing?: Pricing;
  max_output_tokens?: number;
  owned_by?: string;
}

export interface RateLimitsEntry {
  rpm?: number;
  tpm?: number;
}

export interface PlanEntry extends CatalogEntry {
  quota_tokens: number;
  price_multiplier?: number;
  models?: string[];
  rate_limits?: { key?: RateLimitsEntry; account?: RateLimitsEntry };
  safety?: { enabled?: boolean; streaming?: "json" | "reviewed" };
}

/** POST /admin/v1/providers/{id}/test: one call of one token */
export interface ProviderTestResult {
  ok: boolean;
  latency_ms: number;
  /** the upstream model asked */
  model: string;
  /** the upstream's HTTP status; null when none came (a timeout, a refused connection) */
  status: number | null;
  error: string | null;
}

/** GET /admin/v1/providers/{id}/keys: one upstream key of the provider's pool */
export interface UpstreamKeyState {
  index: number;
  /** the key's last characters */
  hint: string;
  state: "ready" | "cooling";
  /** Unix ms; null when ready */
  cooling_until: number | null;
  failures: number;
  last_error: string | null;
  calls: number;
}

/** GET /admin/v1/usage: one group's figures over the range */
export interface UsageRow {
  /** the model, provider, account id, key id, day (YYYY-MM-DD), hour or status */
  group: string;
  calls: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_nanos: number;
  avg_latency_ms: number | null;
}

/** GET /admin/v1/keys: a key with its own rate limits and models */
export interface AdminApiKeyView extends AdminKeyView {
  /** null: the plan's default */
  rpm_limit: number | null;
  tpm_limit: number | null;
  /** null: every model of the account's plan */
  allowed_models: string[] | null;
}

/** PATCH /admin/v1/keys/{id}: any of */
export interface AdminKeyPatch {
  rpm_limit?: number | null;
  tpm_limit?: number | null;
  allowed_models?: string[] | null;
  limit_tokens?: number | null;
  budget_nanos?: number | null;
  budget_period?: "none" | "month";
  disabled?: boolean;
}
