// What the admin API (/admin/v1, docs/admin-api.md) answers, as types the console's operator
// pages can import as the console API's (./console.ts). The routes' zod schemas
// (src/http/routes/admin/schemas.ts) are checked against these, and the OpenAPI document is
// made from those schemas. Only types here, from modules that import nothing.
import type { AdminScope } from "../accounts/admin-scopes.ts";
import type { UsageGroup } from "../domain/usage-groups.ts";
import type {
  AccountView,
  AdminKeyView,
  CallRecordView,
  SessionView,
  TicketMessageView,
  TicketView,
  UserView,
} from "./console.ts";

export type { AdminScope, UsageGroup };

/** A list: `has_more` and `next_cursor` (pass it back as `cursor`) where it is paged. */
export interface ListPage<T> {
  object: "list";
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export type AdminAccount = AccountView;

export interface AdminKey extends AdminKeyView {
  /** own requests and tokens per minute; null: the plan's */
  rpm_limit: number | null;
  tpm_limit: number | null;
}

/** POST /keys: the only time the secret is shown */
export interface AdminKeyCreated extends AdminKey {
  secret: string;
}

export type AdminUser = UserView;

/** A call record of any account: the console's, with the account and the deployment that answered. */
export interface AdminRecordView extends CallRecordView {
  account_id: string | null;
  /** the account's name (null: no account, or deleted) */
  account_name: string | null;
  provider: string | null;
  upstream_model: string | null;
}

/** An agent session of one account, summed from its records (GET /sessions?account=) */
export type AdminSession = SessionView;

export type AdminTicket = TicketView;

/** GET /tickets/{id}: the ticket and its thread, oldest first */
export interface AdminTicketThread extends TicketView {
  messages: TicketMessageView[];
}

export type AdminTicketMessage = TicketMessageView;

export interface AdminTokenView {
  id: string;
  name: string;
  /** "gwadmin-" and the first characters of the token */
  prefix: string;
  scopes: AdminScope[];
  /** "cli", "user:<e-mail>" or "token:<id>" */
  created_by: string;
  created_at: number;
  /** to within a minute; null: never used */
  last_used_at: number | null;
  revoked_at: number | null;
}

/** POST /admin-tokens: the only time the token is shown */
export interface AdminTokenCreated extends AdminTokenView {
  secret: string;
}

/** One group's calls in GET /usage. */
export interface UsageRow {
  /**
   * The model, provider, account id, key id or status; for day and hour the UTC period's
   * start ("2026-11-26", "2026-11-26T13:00Z"). Null: calls without one (e.g. refused before
   * a model was known).
   */
  group: string | null;
  /** an account's or a key's name, where it has one; null for the other groups */
  label: string | null;
  calls: number;
  /** calls with status error or upstream_error */
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_nanos: number;
  /** null when the group has no calls with a latency */
  avg_latency_ms: number | null;
}

export interface UsageAnswer {
  object: "list";
  group_by: UsageGroup;
  /** the period aggregated, Unix ms: [from, to) */
  from: number;
  to: number;
  data: UsageRow[];
}

export interface AuditEntryView {
  id: string;
  created_at: number;
  /** "token:<id>", "user:<e-mail>" or "cli" */
  actor: string;
  /** create, update, delete, revoke, reply, … */
  action: string;
  resource: string;
  resource_id: string | null;
  /** the resource before and after the change (null: none, as for a creation), secrets masked */
  before: unknown;
  after: unknown;
}
