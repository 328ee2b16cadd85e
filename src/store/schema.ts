// Row types of the store's tables, as Kysely sees them. Times are Unix milliseconds;
// booleans are 0/1 integers so both dialects read them the same way.

import type { ColumnType, Generated } from "kysely";
import type { CallStatus } from "../domain/outcomes.ts";

export interface AccountsTable {
  id: string;
  name: string;
  plan_id: string;
  /** null: the plan's quota applies */
  quota_tokens: number | null;
  used_tokens: Generated<number>;
  /** tokens held by calls in flight on any instance (the shared ledger on PostgreSQL; 0 on SQLite) */
  reserved_tokens: Generated<number>;
  /** money budget in nanodollars (1e-9 USD); null: none */
  budget_nanos: number | null;
  /** "none" | "month" (calendar month, UTC) */
  budget_period: Generated<string>;
  /** nanodollars charged in total, and in the month spent_month ("YYYY-MM", UTC) */
  spent_nanos: Generated<number>;
  month_spent_nanos: Generated<number>;
  spent_month: Generated<string>;
  /** nanodollars held by calls in flight on any instance (shared ledgers) */
  reserved_nanos: Generated<number>;
  disabled: Generated<number>;
  created_at: number;
  /** content safety for this account: "on" | "off"; null inherits the plan's, then the global, setting */
  safety: string | null;
  /** how streaming requests are answered under safety: "json" | "reviewed"; null inherits */
  safety_streaming: string | null;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string | null;
  /** what the console and CLI show: "sk-" and the first characters of the secret */
  prefix: string;
  /** SHA-256 of the whole key, hex */
  secret_hash: string;
  /** null: no limit of its own */
  limit_tokens: number | null;
  used_tokens: Generated<number>;
  /** tokens held by calls in flight on any instance (the shared ledger on PostgreSQL; 0 on SQLite) */
  reserved_tokens: Generated<number>;
  /** money budget in nanodollars (1e-9 USD); null: none */
  budget_nanos: number | null;
  /** "none" | "month" (calendar month, UTC) */
  budget_period: Generated<string>;
  /** nanodollars charged in total, and in the month spent_month ("YYYY-MM", UTC) */
  spent_nanos: Generated<number>;
  month_spent_nanos: Generated<number>;
  spent_month: Generated<string>;
  /** nanodollars held by calls in flight on any instance (shared ledgers) */
  reserved_nanos: Generated<number>;
  disabled: Generated<number>;
  created_at: number;
  /** own requests per minute; null: the plan's default */
  rpm_limit: number | null;
  /** own tokens per minute; null: the plan's default */
  tpm_limit: number | null;
  /** set when the key was deleted: it no longer authenticates, its records stay */
  deleted_at: number | null;
  /** JSON array of the public models the key may call; null: every model of its plan */
  allowed_models: string | null;
  /** what each agent session of the key may use in tokens, and in nanodollars; null: no cap */
  session_limit_tokens: number | null;
  session_budget_nanos: number | null;
}

export interface LiveUsageTable {
  instance_id: string;
  /** "key:<id>" or "account:<id>" */
  subject: string;
  reserved_tokens: number;
  /** JSON of the rate windows: { requests?: RateWindow, tokens?: RateWindow } */
  windows: string;
  updated_at: number;
}

export interface CallRecordsTable {
  request_id: string;
  created_at: number;
  /** the client API the call came in: chat.completions | messages | responses */
  api: string;
  account_id: string | null;
  key_id: string | null;
  public_model: string | null;
  upstream_model: string | null;
  provider: string | null;
  /** JSON of the main parameters (temperature, top_p, max_tokens, n, …); never message text */
  params: string | null;
  stream: number;
  status: CallStatus;
  http_status: number;
  error_code: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** tokens the upstream counted that were not charged (the gateway's own failure): the operator's cost */
  uncharged_tokens: number;
  /** of prompt_tokens, read from the provider's prompt cache */
  cached_tokens: number;
  /** of prompt_tokens, written to the provider's prompt cache (Anthropic bills these above base input) */
  cache_write_tokens: number;
  /** of completion_tokens, reasoning (thinking) tokens */
  reasoning_tokens: number;
  /** tokens the call held in the ledger (0: refused before it held any) */
  reserved_tokens: number;
  /** reported usage beyond what was held: the upstream counted more than the reservation's bound */
  overrun_tokens: number;
  /** upstream | estimated | none */
  usage_source: string;
  latency_ms: number;
  ttft_ms: number | null;
  /** null: safety off for this call; json | reviewed: how a streaming request was answered; off-stream calls say json */
  safety_mode: string | null;
  /** pass | flagged | error; null when nothing was reviewed */
  safety_verdict: string | null;
  /** JSON array of the categories that flagged, e.g. ["violence"]; null when none */
  safety_categories: string | null;
  /** time spent in reviews, input and output together */
  safety_ms: number | null;
  /**
   * JSON array of the upstream attempts, in order: {model, provider, upstream_model, outcome,
   * status, ms}; null when the call reached no upstream. provider and upstream_model above
   * are the deployment that answered (or, when none did, the last one tried).
   */
  attempts: string | null;
  /** nanodollars charged: the token kinds above at the model's prices, times the plan's multiplier */
  cost_nanos: number;
  /** nanodollars the call cost but was not charged: the gateway's own faults, or beyond what a budget held */
  uncharged_cost_nanos: number;
  /** where the prices came from: config | table | unpriced; null when no model was resolved */
  cost_source: string | null;
  /** the agent session the client named (migrations/023-agent-sessions.ts); null: none */
  session_id: string | null;
  /** how it named it: header | claude-code | codex; null with no session */
  session_client: string | null;
}

export interface DeploymentHealthTable {
  instance_id: string;
  /** "provider/upstream_model" */
  deployment: string;
  failures: number;
  cooling_until: number | null;
  cooldown_reason: string | null;
  in_flight: number;
  latency_ms: number | null;
  updated_at: number;
}

export interface UsersTable {
  id: string;
  account_id: string;
  /** lower-cased */
  email: string;
  /** member | owner | admin */
  role: string;
  /** scrypt$N$r$p$salt$hash */
  password_hash: string;
  disabled: Generated<number>;
  created_at: number;
}

export interface SessionsTable {
  /** SHA-256 of the cookie value, hex */
  id_hash: string;
  user_id: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

export interface TicketsTable {
  id: string;
  account_id: string;
  /** problem | plan_upgrade | older_history | extra_export */
  kind: string;
  subject: string;
  /** open | answered | closed */
  status: string;
  description: string;
  problem_at: number | null;
  key_id: string | null;
  model: string | null;
  /** JSON of the main parameters, as the caller gave them */
  params: string | null;
  error: string | null;
  request_id: string | null;
  /** user id */
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface TicketMessagesTable {
  id: string;
  ticket_id: string;
  author_id: string;
  body: string;
  created_at: number;
}

export interface DailyUsageTable {
  account_id: string;
  /** UTC day, YYYY-MM-DD */
  day: string;
  /** "" for calls without a key */
  key_id: string;
  /** public model, "" when none */
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  calls: number;
  /** nanodollars charged */
  cost_nanos: Generated<number>;
}

export interface ModelsSeenTable {
  id: string;
  created_at: number;
}

export interface RevisionTable {
  id: number;
  value: number;
}

/** The shared ledger's tables (PostgreSQL only): see migrations/010-shared-ledger.ts. */
export interface LedgerInstancesTable {
  id: string;
  started_at: number;
  heartbeat_at: number;
  redis: number;
}

export interface LedgerReservationsTable {
  id: Generated<number>;
  instance_id: string;
  /** with Redis: the hold's id there; null when the ledger is PostgreSQL's */
  hold: number | null;
  account_id: string;
  key_id: string;
  tokens: number;
  /** nanodollars the hold holds against the account's budget, and the key's (0: none) */
  account_nanos: Generated<number>;
  key_nanos: Generated<number>;
  /** the agent session whose cap the hold counts against (null: none), and its nanodollars there */
  session_id: string | null;
  session_nanos: Generated<number>;
  created_at: number;
  /**
   * With Redis: the call's charge, once its record is committed, until the hold closed in
   * Redis (migrations/024-batch-commit.ts); null while the call runs. A charged row holds
   * nothing: seeds and open-hold counts skip it, a sweep applies it.
   */
  charged_tokens: number | null;
  charged_nanos: number | null;
}

/**
 * What an agent session of a key that caps sessions used and holds (PostgreSQL only:
 * migrations/023-agent-sessions.ts).
 */
export interface SessionUsageTable {
  key_id: string;
  session_id: string;
  account_id: string;
  used_tokens: Generated<number>;
  reserved_tokens: Generated<number>;
  spent_nanos: Generated<number>;
  reserved_nanos: Generated<number>;
  created_at: number;
}

export interface LedgerWaitersTable {
  id: Generated<number>;
  instance_id: string;
  account_id: string;
  key_id: string;
  expires_at: number;
}

/** Responses of the Responses API kept for their account (migrations/013-stored-responses.ts). */
export interface StoredResponsesTable {
  /** resp_… */
  id: string;
  account_id: string;
  created_at: number;
  previous_response_id: string | null;
  /** JSON: this request's input items */
  input: string;
  /** JSON: the Response object as the client received it */
  response: string;
  /** the key that made it: null for rows from before keys were kept (the account's, then) */
  key_id: string | null;
  /** the bytes of `input` and `response`, for the account's bound */
  bytes: ColumnType<number, number | undefined, number>;
}

/** The console's login throttle: one row per counter (migrations/018-login-throttle.ts). */
export interface LoginThrottleTable {
  /** SHA-256 (base64url) of what the row counts: an e-mail and a client address, an address, an e-mail */
  key: string;
  /** failures not yet forgotten, as of last_at */
  level: number;
  /** the last counted failure */
  last_at: number;
  /** e-mail and address rows: a login from that address succeeded; trusted until then */
  trusted_until: number | null;
}

export interface CatalogEntriesTable {
  /** providers | models | plans */
  kind: string;
  id: string;
  /** the entry's place in its list */
  position: number;
  /** JSON of the entry without its secrets */
  body: string;
  /** a provider's secrets, encrypted (src/catalog/secret-box.ts); null: none */
  secrets: string | null;
  updated_at: number;
}

export interface AdminTokensTable {
  id: string;
  name: string;
  prefix: string;
  /** SHA-256 of the whole token, hex */
  secret_hash: string;
  /** JSON array of scopes */
  scopes: string;
  created_by: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface AuditLogTable {
  id: string;
  created_at: number;
  actor: string;
  action: string;
  resource: string;
  resource_id: string | null;
  /** JSON, secrets masked */
  before: string | null;
  after: string | null;
}

export interface Database {
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  call_records: CallRecordsTable;
  models_seen: ModelsSeenTable;
  revision: RevisionTable;
  live_usage: LiveUsageTable;
  users: UsersTable;
  sessions: SessionsTable;
  tickets: TicketsTable;
  ticket_messages: TicketMessagesTable;
  daily_usage: DailyUsageTable;
  deployment_health: DeploymentHealthTable;
  ledger_instances: LedgerInstancesTable;
  ledger_reservations: LedgerReservationsTable;
  ledger_waiters: LedgerWaitersTable;
  session_usage: SessionUsageTable;
  stored_responses: StoredResponsesTable;
  login_throttle: LoginThrottleTable;
  catalog_entries: CatalogEntriesTable;
  admin_tokens: AdminTokensTable;
  audit_log: AuditLogTable;
}
