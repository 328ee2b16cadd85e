// The shapes of docs/console-api.md, the contract between this app and the gateway.

export type Role = "member" | "owner" | "admin";

export interface User {
  id: string;
  email: string;
  role: Role;
  account_id: string;
  created_at: number;
  /** not in every answer; shown when the server sends it */
  disabled?: boolean;
}

export interface Account {
  id: string;
  name: string;
  plan_id: string;
  /** the effective quota: the account's own, else its plan's */
  quota_tokens: number;
  used_tokens: number;
  remaining_tokens: number;
  disabled: boolean;
  created_at: number;
  /** whose quota applies: the account's own or its plan's */
  quota_source?: "plan" | "account";
}

export interface Me {
  user: User;
  account: Account;
}

/** requests and tokens per minute; an absent field is no limit */
export interface RateWindowLimits {
  rpm?: number | null;
  tpm?: number | null;
}

/** the defaults for each key of the plan's accounts, and for the account as a whole */
export interface RateLimits {
  key?: RateWindowLimits;
  account?: RateWindowLimits;
}

export interface Plan {
  id: string;
  quota_tokens: number;
  models: string[];
  rate_limits: RateLimits | null;
}

export interface DailyRow {
  day: string;
  key_id: string;
  key_prefix: string | null;
  key_name: string | null;
  model: string;
  tokens: number;
  calls: number;
}

export interface Overview {
  account: Account;
  plan: Plan | null;
  today: { day?: string; tokens: number; calls: number };
  daily: DailyRow[];
}

export interface Model {
  id: string;
  owned_by: string | null;
}

export interface Key {
  id: string;
  name: string | null;
  prefix: string;
  limit_tokens: number | null;
  used_tokens: number;
  disabled: boolean;
  created_at: number;
}

export type RecordStatus = "ok" | "error" | "client_disconnect" | "upstream_error" | "content_filter";
export const RECORD_STATUSES: RecordStatus[] = [
  "ok",
  "error",
  "client_disconnect",
  "upstream_error",
  "content_filter",
];

export interface CallRecord {
  request_id: string;
  created_at: number;
  key_id: string | null;
  key_prefix: string | null;
  key_name: string | null;
  model: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  status: RecordStatus | string;
  http_status: number;
  error_code: string | null;
  latency_ms: number;
  ttft_ms: number | null;
  stream: boolean | number;
  params: unknown;
  usage_source: string;
  safety_verdict: string | null;
  safety_categories: string[] | null;
}

export type TicketKind = "problem" | "plan_upgrade" | "older_history" | "extra_export";
export type TicketStatus = "open" | "answered" | "closed";

export interface Ticket {
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
  /** text as written in the form (shown as JSON if the server sends an object) */
  params: unknown;
  error: string | null;
  request_id: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface TicketMessage {
  id: string;
  /** null when the author's user no longer exists */
  author_email: string | null;
  author_role: Role | null;
  body: string;
  created_at: number;
}

export interface NewTicket {
  kind: TicketKind;
  subject: string;
  description: string;
  problem_at?: number;
  key_id?: string;
  model?: string;
  params?: string | Record<string, unknown>;
  error?: string;
  request_id?: string;
}
