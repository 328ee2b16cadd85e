// What the console API sends (docs/console-api.md), defined once: the routes and the queries
// behind them build these shapes, and the web console (console/src/types.ts) imports them as
// types. Only types here, imported only from modules that import nothing (the lists of roles,
// call statuses and ticket kinds), so the console's type check reads no other server code and
// its bundle gets none at all.
import type { Role } from "../accounts/roles.ts";
import type { ApiName } from "../domain/api-names.ts";
import type { CallStatus } from "../domain/outcomes.ts";
import type { SessionClient } from "../domain/sessions.ts";
import type { TicketKind, TicketStatus } from "../domain/ticket-kinds.ts";
import type { BudgetPeriod } from "../prices/period.ts";

export type { ApiName, BudgetPeriod, CallStatus, Role, SessionClient, TicketKind, TicketStatus };

// Flags are booleans here (0/1 in the store); times are Unix milliseconds; money is integer
// nanodollars (1e-9 USD, `*_nanos`), exact as the store keeps it, so sums stay exact.

export interface UserView {
  id: string;
  email: string;
  role: Role;
  account_id: string;
  disabled: boolean;
  created_at: number;
}

/** A money budget, an account's or a key's, and what counts against it now. */
export interface BudgetView {
  /** null: no budget */
  budget_nanos: number | null;
  /** "month": resets at the start of each calendar month (UTC); "none" also without a budget */
  budget_period: BudgetPeriod;
  /** spent in the budget's period: this UTC month for a monthly budget, else in total (settled calls) */
  spent_nanos: number;
  /** budget less spent, never below 0; null without a budget */
  left_nanos: number | null;
  /** when a monthly budget starts again; null otherwise */
  budget_resets_at: number | null;
}

export interface AccountView extends BudgetView {
  id: string;
  name: string;
  plan_id: string;
  /** the effective quota: the account's own, else its plan's */
  quota_tokens: number;
  /** whose quota applies */
  quota_source: "plan" | "account";
  used_tokens: number;
  remaining_tokens: number;
  disabled: boolean;
  created_at: number;
}

/** requests and tokens per minute; null is no limit */
export interface RateWindow {
  rpm: number | null;
  tpm: number | null;
}

export interface PlanView {
  id: string;
  quota_tokens: number;
  models: string[];
  /** the defaults for each key of the plan's accounts, and for each account as a whole */
  rate_limits: { key: RateWindow; account: RateWindow };
}

export interface ModelView {
  id: string;
  owned_by: string | null;
}

export interface KeyView extends BudgetView {
  id: string;
  name: string | null;
  prefix: string;
  limit_tokens: number | null;
  used_tokens: number;
  /** the public models the key may call, within its plan's; null: every model of the plan */
  allowed_models: string[] | null;
  /** what each agent session of the key may use over its life: tokens, and nanodollars; null: no cap */
  session_limit_tokens: number | null;
  session_budget_nanos: number | null;
  disabled: boolean;
  created_at: number;
}

/** A key in the administrators' list of every account's keys. */
export interface AdminKeyView extends KeyView {
  account_id: string;
  account_name: string;
}

/** One UTC day of one key and model (null: calls without one). */
export interface DailyRow {
  day: string;
  key_id: string | null;
  key_prefix: string | null;
  key_name: string | null;
  model: string | null;
  tokens: number;
  /** every call, failed ones too */
  calls: number;
  cost_nanos: number;
}

/** A call record as the console shows and exports it. */
export interface CallRecordView {
  request_id: string;
  created_at: number;
  key_id: string | null;
  key_prefix: string | null;
  key_name: string | null;
  model: string | null;
  /** the client API the call came in */
  api: ApiName;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  status: CallStatus;
  http_status: number;
  error_code: string | null;
  latency_ms: number;
  ttft_ms: number | null;
  stream: boolean;
  /** the main parameters, parsed from their JSON */
  params: unknown;
  usage_source: string;
  safety_verdict: string | null;
  safety_categories: string[] | null;
  /** of the prompt: cache reads and cache writes; of the completion: reasoning (as the upstream reported them) */
  cached_tokens: number;
  cache_write_tokens: number;
  reasoning_tokens: number;
  /** what the call was charged, in dollars: cost_nanos as a decimal number, for people and spreadsheets */
  cost_usd: number;
  cost_nanos: number;
  /**
   * where its prices came from: the model's `pricing` (config), the price table (table), or
   * none (unpriced: the call cost 0); null when no model was resolved (src/prices/pricing.ts)
   */
  cost_source: "config" | "table" | "unpriced" | null;
  /** the agent session the client named (docs/records.md); null: none */
  session_id: string | null;
  /** how the client named it; null with no session */
  session_client: SessionClient | null;
}

/** An agent session of the account, summed from its calls' records (docs/records.md). */
export interface SessionView {
  session_id: string;
  /** how the client named it (its calls name it one way) */
  client: SessionClient | null;
  /** its first and last call */
  first_at: number;
  last_at: number;
  calls: number;
  /** calls that did not end ok */
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost_usd: number;
  cost_nanos: number;
  /** the public models and client APIs its calls used, and the keys they came through */
  models: string[];
  apis: ApiName[];
  keys: { id: string; prefix: string | null; name: string | null }[];
}

export interface TicketView {
  id: string;
  account_id: string;
  account_name: string | null;
  kind: TicketKind;
  subject: string;
  status: TicketStatus;
  description: string;
  problem_at: number | null;
  key_id: string | null;
  key_prefix: string | null;
  model: string | null;
  /** as the reporter gave them: usually the record's parameters (an object), or free text */
  params: unknown;
  error: string | null;
  request_id: string | null;
  /** user id */
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface TicketMessageView {
  id: string;
  /** both null when the author's user no longer exists */
  author_email: string | null;
  author_role: Role | null;
  body: string;
  created_at: number;
}

// The answers, call by call.

/** GET /models, /keys, /tickets, /admin/accounts, /admin/keys, /admin/users */
export interface List<T> {
  data: T[];
}

/** GET /me */
export interface MeAnswer {
  user: UserView;
  account: AccountView;
}

/** GET /overview */
export interface OverviewAnswer {
  account: AccountView;
  /** null when the account's plan is no longer configured */
  plan: PlanView | null;
  today: { day: string; tokens: number; calls: number; cost_nanos: number };
  /** the last 30 UTC days, today included */
  daily: DailyRow[];
}

/** GET /plans */
export interface PlansAnswer {
  current: PlanView | null;
  plans: PlanView[];
  /**
   * content safety as it applies to the account's calls now (account, then plan, then the
   * global setting): off, or on with `streaming` json (a stream is answered as one reviewed
   * JSON body) or reviewed (SSE of reviewed segments)
   */
  safety: { enabled: boolean; streaming: "json" | "reviewed" };
}

/** POST /keys: the only time the secret is shown */
export interface KeyCreated {
  key: KeyView;
  secret: string;
}

/** GET /records: one page; `next_before` continues it (null at the end) */
export interface RecordsAnswer {
  data: CallRecordView[];
  next_before: string | null;
}

/** GET /sessions: one page, the session with the latest call first; `next_before` continues it */
export interface SessionsAnswer {
  data: SessionView[];
  next_before: string | null;
}

/** GET /sessions/:id: the session and a page of its calls in order; `next_after` continues it */
export interface SessionCallsAnswer {
  session: SessionView;
  data: CallRecordView[];
  next_after: string | null;
}

/** GET /tickets/:id */
export interface TicketThread {
  ticket: TicketView;
  messages: TicketMessageView[];
}

/** POST /login, POST and PATCH /admin/users */
export interface UserAnswer {
  user: UserView;
}

/** POST and PATCH /admin/accounts */
export interface AccountAnswer {
  account: AccountView;
}

/** PATCH /keys/:id */
export interface KeyAnswer {
  key: KeyView;
}

/** PATCH /admin/keys/:id */
export interface AdminKeyAnswer {
  key: AdminKeyView;
}

/** POST /tickets, PATCH /tickets/:id */
export interface TicketAnswer {
  ticket: TicketView;
}

/** POST /tickets/:id/messages */
export interface MessageAnswer {
  message: TicketMessageView;
}

/** POST /tickets: what the console sends (the route's schema also takes null for "none"). */
export type NewTicketBody = Pick<TicketView, "kind" | "subject" | "description"> & {
  problem_at?: number;
  key_id?: string;
  model?: string;
  /** a record's parameters as an object, or what the reporter typed */
  params?: string | Record<string, unknown>;
  error?: string;
  request_id?: string;
};
