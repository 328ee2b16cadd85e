// The admin API's input and answers as zod schemas: the routes validate with them and the
// OpenAPI document is made from them (./openapi.ts). Each answer is checked against its type
// in src/views/admin.ts (`satisfies`), and the routes must return that type, so the types, the
// schemas and the document move together. Answers are strict objects: a field the document
// does not name fails the tests that validate every answer against it.
import { z } from "zod";
import { ADMIN_SCOPES } from "../../../accounts/admin-scopes.ts";
import { ROLES } from "../../../accounts/roles.ts";
import { API_NAMES } from "../../../domain/api-names.ts";
import { CALL_STATUSES } from "../../../domain/outcomes.ts";
import { SESSION_CLIENTS, SESSION_ID } from "../../../domain/sessions.ts";
import { TICKET_KINDS, TICKET_STATUSES } from "../../../domain/ticket-kinds.ts";
import { USAGE_GROUPS } from "../../../domain/usage-groups.ts";
import { BUDGET_PERIODS } from "../../../prices/period.ts";
import { type Cursor, decodeCursor } from "../../../records/queries.ts";
import { decodeSessionCursor, type SessionCursor } from "../../../records/sessions.ts";
import type {
  AdminAccount,
  AdminKey,
  AdminKeyCreated,
  AdminRecordView,
  AdminSession,
  AdminTicket,
  AdminTicketMessage,
  AdminTicketThread,
  AdminTokenCreated,
  AdminTokenView,
  AdminUser,
  AuditEntryView,
  UsageAnswer,
} from "../../../views/admin.ts";
import { idParam, queryInt } from "../console/context.ts";
import {
  accountName,
  allowedModels,
  budgetNanos,
  budgetPeriod,
  keyName,
  limitTokens,
  password,
  planId,
  quota,
  rateLimit,
  sessionBudgetNanos,
  sessionLimitTokens,
} from "../fields.ts";

/** The document's named schemas: request bodies (read as they are sent) and answers. */
export const requestSchemas = z.registry<{ id: string }>();
export const answerSchemas = z.registry<{ id: string }>();

function named<T extends z.ZodType>(registry: typeof requestSchemas, id: string, schema: T): T {
  registry.add(schema, { id });
  return schema;
}

const int = z.number().int();
const time = int.nonnegative().describe("Unix milliseconds");

// ---- query parameters

export const noQuery = z.object({}).strict();

/** A point in time: Unix ms, or an ISO 8601 date (its UTC midnight) or date-time with a zone. */
const TIME_TEXT =
  /^(\d{1,15}|\d{4}-\d{2}-\d{2}|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))$/;

export function parseTime(text: string): number | undefined {
  if (!TIME_TEXT.test(text)) return undefined;
  if (/^\d+$/.test(text)) return Number(text);
  if (text.length === 10) {
    const ms = Date.parse(`${text}T00:00:00Z`);
    // Date.parse rolls 2026-02-30 over into March: a date that does not exist is refused
    return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== text ? undefined : ms;
  }
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}

export const timeParam = z
  .string()
  .regex(TIME_TEXT, "must be Unix milliseconds, or an ISO 8601 date or date-time with a zone")
  .transform((text, ctx) => {
    const ms = parseTime(text);
    if (ms === undefined) {
      ctx.addIssue({ code: "custom", message: "is not a date that exists" });
      return z.NEVER;
    }
    return ms;
  })
  .describe(
    "Unix milliseconds (`1796083200000`), or an ISO 8601 date (`2026-12-01`: that UTC day's start) or date-time with its zone (`2026-12-01T13:00:00Z`, `…+01:00`)",
  );

/** The `next_cursor` of a list answer, passed back for the next page. */
export const cursorParam = z
  .string()
  .max(200)
  .transform((text, ctx): Cursor => {
    const cursor = decodeCursor(text);
    if (!cursor) {
      ctx.addIssue({ code: "custom", message: "is not a cursor this API returned" });
      return z.NEVER;
    }
    return cursor;
  })
  .describe("the `next_cursor` of the previous page");

const pageLimit = (max: number, fallback: number) =>
  queryInt(1, max).describe(`at most this many (1-${max}, default ${fallback})`);

export const keysQuery = z
  .object({ account: idParam.optional().describe("only this account's keys") })
  .strict();
export const usersQuery = z
  .object({ account: idParam.optional().describe("only this account's users") })
  .strict();

const sessionParam = z.string().regex(SESSION_ID, "is not a session id");

const recordFilters = {
  from: timeParam.optional().describe("records made at or after this time (see `to`)"),
  to: timeParam
    .optional()
    .describe(
      "records made before this time: Unix milliseconds, or an ISO 8601 date (that UTC day's start) or date-time with its zone",
    ),
  account: idParam.optional().describe("one account's records"),
  key: idParam.optional().describe("one key's records"),
  model: z.string().min(1).max(200).optional().describe("the public model called"),
  status: z.enum(CALL_STATUSES).optional(),
  request_id: idParam.optional().describe("the one record of a request (its `x-request-id`)"),
  api: z.enum(API_NAMES).optional().describe("the client API the call came in"),
  session: sessionParam.optional().describe("one agent session's records (with `account`: that account's)"),
};

export const RECORDS_DEFAULT_LIMIT = 100;
export const recordsQuery = z
  .object({
    ...recordFilters,
    limit: pageLimit(500, RECORDS_DEFAULT_LIMIT).optional(),
    cursor: cursorParam.optional(),
  })
  .strict();
export const exportQuery = z
  .object({ ...recordFilters, format: z.enum(["csv", "jsonl"]).default("csv") })
  .strict();

export const SESSIONS_DEFAULT_LIMIT = 50;
export const sessionsQuery = z
  .object({
    account: idParam.describe("the account whose sessions are listed"),
    key: idParam.optional().describe("only the sessions with a call through this key"),
    limit: pageLimit(200, SESSIONS_DEFAULT_LIMIT).optional(),
    cursor: z
      .string()
      .max(300)
      .transform((text, ctx): SessionCursor => {
        const cursor = decodeSessionCursor(text);
        if (!cursor) {
          ctx.addIssue({ code: "custom", message: "is not a cursor this API returned" });
          return z.NEVER;
        }
        return cursor;
      })
      .describe("the `next_cursor` of the previous page")
      .optional(),
  })
  .strict();

export const ticketsQuery = z
  .object({
    account: idParam.optional().describe("one account's tickets"),
    status: z.enum(TICKET_STATUSES).optional(),
  })
  .strict();

export const USAGE_DEFAULT_DAYS = 30;
export const USAGE_DEFAULT_LIMIT = 1000;
export const usageQuery = z
  .object({
    group_by: z.enum(USAGE_GROUPS).default("day"),
    from: timeParam
      .optional()
      .describe(`the period's start (default: ${USAGE_DEFAULT_DAYS} days before \`to\`)`),
    to: timeParam.optional().describe("the period's end, exclusive (default: now)"),
    account: idParam.optional(),
    key: idParam.optional(),
    model: z.string().min(1).max(200).optional(),
    provider: z.string().min(1).max(200).optional(),
    limit: pageLimit(10_000, USAGE_DEFAULT_LIMIT).optional(),
  })
  .strict();

export const AUDIT_DEFAULT_LIMIT = 100;
export const auditQuery = z
  .object({
    resource: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe("accounts, keys, users, tickets, admin-tokens, providers, …"),
    resource_id: z.string().min(1).max(200).optional(),
    actor: z.string().min(1).max(400).optional().describe('"token:<id>", "user:<e-mail>" or "cli"'),
    from: timeParam.optional(),
    to: timeParam.optional(),
    limit: pageLimit(500, AUDIT_DEFAULT_LIMIT).optional(),
    cursor: cursorParam.optional(),
  })
  .strict();

// ---- request bodies

const atLeastOne = (fields: string) => ({ message: `give at least one of ${fields}` });
const someField = (b: object) => Object.values(b).some((v) => v !== undefined);

export const accountCreate = named(
  requestSchemas,
  "AccountCreate",
  z
    .object({
      name: accountName,
      plan_id: planId.optional().describe("default: the configuration's `default_plan`"),
      quota_tokens: quota.nullable().optional().describe("null: the plan's"),
    })
    .strict(),
);

export const accountPatch = named(
  requestSchemas,
  "AccountPatch",
  z
    .object({
      name: accountName.optional(),
      plan_id: planId.optional(),
      quota_tokens: quota.nullable().optional().describe("null: the plan's"),
      disabled: z.boolean().optional(),
      budget_nanos: budgetNanos.optional().describe("nanodollars; null removes the budget"),
      budget_period: budgetPeriod.optional(),
    })
    .strict()
    .refine(someField, atLeastOne("name, plan_id, quota_tokens, disabled, budget_nanos, budget_period")),
);

const keyFields = {
  name: keyName.optional(),
  limit_tokens: limitTokens.optional().describe("the key's own token limit; null: none"),
  rpm_limit: rateLimit.optional().describe("requests per minute; null: the plan's"),
  tpm_limit: rateLimit.optional().describe("tokens per minute; null: the plan's"),
  allowed_models: allowedModels
    .optional()
    .describe("the public models of its plan the key may call; null: every model of the plan"),
  budget_nanos: budgetNanos.optional().describe("nanodollars; null: none"),
  budget_period: budgetPeriod.optional(),
  session_limit_tokens: sessionLimitTokens
    .optional()
    .describe("what each agent session of the key may use over its life, in tokens; null: no cap"),
  session_budget_nanos: sessionBudgetNanos
    .optional()
    .describe("what each agent session of the key may cost over its life, in nanodollars; null: no cap"),
};

export const keyCreate = named(
  requestSchemas,
  "KeyCreate",
  z.object({ account_id: idParam, ...keyFields }).strict(),
);

export const keyPatch = named(
  requestSchemas,
  "KeyPatch",
  z
    .object({ ...keyFields, disabled: z.boolean().optional() })
    .strict()
    .refine(
      someField,
      atLeastOne(
        "name, limit_tokens, rpm_limit, tpm_limit, allowed_models, disabled, budget_nanos, budget_period, session_limit_tokens, session_budget_nanos",
      ),
    ),
);

export const userCreate = named(
  requestSchemas,
  "UserCreate",
  z
    .object({
      email: z.string().min(1).max(320),
      account_id: idParam,
      role: z.enum(ROLES),
      password: password.describe("8-1024 characters"),
    })
    .strict(),
);

export const userPatch = named(
  requestSchemas,
  "UserPatch",
  z
    .object({
      role: z.enum(ROLES).optional(),
      password: password.optional().describe("ends the user's sessions"),
      disabled: z.boolean().optional().describe("true ends the user's sessions"),
    })
    .strict()
    .refine(someField, atLeastOne("role, password, disabled")),
);

export const ticketPatch = named(
  requestSchemas,
  "TicketPatch",
  z.object({ status: z.enum(TICKET_STATUSES) }).strict(),
);

export const ticketReply = named(
  requestSchemas,
  "TicketReply",
  z.object({ body: z.string().trim().min(1).max(20_000) }).strict(),
);

export const adminTokenCreate = named(
  requestSchemas,
  "AdminTokenCreate",
  z
    .object({
      name: z.string().trim().min(1).max(100),
      scopes: z.array(z.enum(ADMIN_SCOPES)).min(1).max(ADMIN_SCOPES.length),
    })
    .strict(),
);

// ---- answers

const list = <T extends z.ZodType>(item: T) =>
  z.strictObject({
    object: z.literal("list"),
    data: z.array(item),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  });

const budget = {
  budget_nanos: int.nullable().describe("the money budget in nanodollars; null: none"),
  budget_period: z.enum(BUDGET_PERIODS),
  spent_nanos: int.describe(
    "spent in the budget's period (this UTC month for a monthly budget, else in total)",
  ),
  left_nanos: int.nullable(),
  budget_resets_at: time.nullable(),
};

export const accountAnswer = named(
  answerSchemas,
  "Account",
  z.strictObject({
    id: z.string(),
    name: z.string(),
    plan_id: z.string(),
    quota_tokens: int.describe("the effective quota: the account's own, else its plan's"),
    quota_source: z.enum(["plan", "account"]),
    used_tokens: int,
    remaining_tokens: int,
    ...budget,
    disabled: z.boolean(),
    created_at: time,
  }),
) satisfies z.ZodType<AdminAccount>;

export const keyAnswer = named(
  answerSchemas,
  "Key",
  z.strictObject({
    id: z.string(),
    account_id: z.string(),
    account_name: z.string(),
    name: z.string().nullable(),
    prefix: z.string().describe('"sk-" and the first characters of the secret'),
    limit_tokens: int.nullable(),
    used_tokens: int,
    rpm_limit: int.nullable(),
    tpm_limit: int.nullable(),
    allowed_models: z.array(z.string()).nullable(),
    session_limit_tokens: int.nullable().describe("each agent session's cap in tokens; null: none"),
    session_budget_nanos: int.nullable().describe("each agent session's cap in nanodollars; null: none"),
    ...budget,
    disabled: z.boolean(),
    created_at: time,
  }),
) satisfies z.ZodType<AdminKey>;

export const keyCreatedAnswer = named(
  answerSchemas,
  "KeyCreated",
  z.strictObject({ ...keyAnswer.shape, secret: z.string().describe("the key: shown this once") }),
) satisfies z.ZodType<AdminKeyCreated>;

export const userAnswer = named(
  answerSchemas,
  "User",
  z.strictObject({
    id: z.string(),
    email: z.string(),
    role: z.enum(ROLES),
    account_id: z.string(),
    disabled: z.boolean(),
    created_at: time,
  }),
) satisfies z.ZodType<AdminUser>;

export const recordAnswer = named(
  answerSchemas,
  "Record",
  z.strictObject({
    request_id: z.string(),
    created_at: time,
    account_id: z.string().nullable(),
    account_name: z.string().nullable(),
    key_id: z.string().nullable(),
    key_prefix: z.string().nullable(),
    key_name: z.string().nullable(),
    model: z.string().nullable(),
    provider: z.string().nullable(),
    upstream_model: z.string().nullable(),
    api: z.enum(API_NAMES),
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int,
    status: z.enum(CALL_STATUSES),
    http_status: int,
    error_code: z.string().nullable(),
    latency_ms: int,
    ttft_ms: int.nullable(),
    stream: z.boolean(),
    params: z.unknown().describe("the main parameters (temperature, max_tokens, …); never message text"),
    usage_source: z.string(),
    safety_verdict: z.string().nullable(),
    safety_categories: z.array(z.string()).nullable(),
    cached_tokens: int,
    cache_write_tokens: int,
    reasoning_tokens: int,
    cost_usd: z.number(),
    cost_nanos: int,
    cost_source: z.enum(["config", "table", "unpriced"]).nullable(),
    session_id: z.string().nullable().describe("the agent session the client named; null: none"),
    session_client: z
      .enum(SESSION_CLIENTS)
      .nullable()
      .describe("how: an `x-session-id` header, Claude Code's session, Codex's thread"),
  }),
) satisfies z.ZodType<AdminRecordView>;

export const sessionAnswer = named(
  answerSchemas,
  "Session",
  z.strictObject({
    session_id: z.string().describe("as the client named it"),
    client: z
      .enum(SESSION_CLIENTS)
      .nullable()
      .describe("how: an `x-session-id` header, Claude Code's session, Codex's thread"),
    first_at: time.describe("its first call"),
    last_at: time.describe("its last call"),
    calls: int,
    errors: int.describe("calls that did not end `ok`"),
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int,
    cost_usd: z.number(),
    cost_nanos: int,
    models: z.array(z.string()).describe("the public models its calls asked for"),
    apis: z.array(z.enum(API_NAMES)).describe("the client APIs its calls came in"),
    keys: z
      .array(z.strictObject({ id: z.string(), prefix: z.string().nullable(), name: z.string().nullable() }))
      .describe("the keys its calls came through"),
  }),
) satisfies z.ZodType<AdminSession>;

export const ticketAnswer = named(
  answerSchemas,
  "Ticket",
  z.strictObject({
    id: z.string(),
    account_id: z.string(),
    account_name: z.string().nullable(),
    kind: z.enum(TICKET_KINDS),
    subject: z.string(),
    status: z.enum(TICKET_STATUSES),
    description: z.string(),
    problem_at: time.nullable(),
    key_id: z.string().nullable(),
    key_prefix: z.string().nullable(),
    model: z.string().nullable(),
    params: z.unknown(),
    error: z.string().nullable(),
    request_id: z.string().nullable(),
    created_by: z.string(),
    created_at: time,
    updated_at: time,
  }),
) satisfies z.ZodType<AdminTicket>;

export const ticketMessageAnswer = named(
  answerSchemas,
  "TicketMessage",
  z.strictObject({
    id: z.string(),
    author_email: z
      .string()
      .nullable()
      .describe("null for a reply through an admin token, or by a user that no longer exists"),
    author_role: z.enum(ROLES).nullable(),
    body: z.string(),
    created_at: time,
  }),
) satisfies z.ZodType<AdminTicketMessage>;

export const ticketThreadAnswer = named(
  answerSchemas,
  "TicketThread",
  z.strictObject({ ...ticketAnswer.shape, messages: z.array(ticketMessageAnswer) }),
) satisfies z.ZodType<AdminTicketThread>;

export const adminTokenAnswer = named(
  answerSchemas,
  "AdminToken",
  z.strictObject({
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe('"gwadmin-" and the first characters of the token'),
    scopes: z.array(z.enum(ADMIN_SCOPES)),
    created_by: z.string(),
    created_at: time,
    last_used_at: time.nullable().describe("to within a minute"),
    revoked_at: time.nullable(),
  }),
) satisfies z.ZodType<AdminTokenView>;

export const adminTokenCreatedAnswer = named(
  answerSchemas,
  "AdminTokenCreated",
  z.strictObject({ ...adminTokenAnswer.shape, secret: z.string().describe("the token: shown this once") }),
) satisfies z.ZodType<AdminTokenCreated>;

export const usageAnswer = named(
  answerSchemas,
  "Usage",
  z.strictObject({
    object: z.literal("list"),
    group_by: z.enum(USAGE_GROUPS),
    from: time,
    to: time,
    has_more: z.boolean().describe("the limit cut the groups short"),
    data: z.array(
      z.strictObject({
        group: z.string().nullable(),
        label: z.string().nullable(),
        calls: int,
        errors: int,
        prompt_tokens: int,
        completion_tokens: int,
        total_tokens: int,
        cost_nanos: int,
        avg_latency_ms: int.nullable(),
      }),
    ),
  }),
) satisfies z.ZodType<UsageAnswer>;

export const auditEntryAnswer = named(
  answerSchemas,
  "AuditEntry",
  z.strictObject({
    id: z.string(),
    created_at: time,
    actor: z.string(),
    action: z.string(),
    resource: z.string(),
    resource_id: z.string().nullable(),
    before: z.unknown().describe("the resource before the change, secrets masked; null: none"),
    after: z.unknown().describe("the resource after the change, secrets masked; null: none"),
  }),
) satisfies z.ZodType<AuditEntryView>;

/**
 * An upstream key of a provider's pool as this instance sees it (the pools' decision, 0031):
 * never the key, only a hint of its last characters. Each instance keeps its own.
 */
export const providerKeyStateAnswer = named(
  answerSchemas,
  "ProviderKeyState",
  z.strictObject({
    index: int.nonnegative().describe("its place in the pool"),
    hint: z.string().describe('"…" and at most its last four characters'),
    state: z.enum(["ready", "cooling"]),
    cooling_until: time.nullable(),
    failures: int.nonnegative().describe("the upstream's refusals of it since it last worked"),
    last_error: z
      .string()
      .nullable()
      .describe('the last refusal in the gateway\'s words ("429 rate limited")'),
    calls: int.nonnegative().describe("the calls it was picked for since the provider was built"),
  }),
);

/** What testing a provider found: `ok`, and what the catalog service adds. */
export const providerTestAnswer = named(
  answerSchemas,
  "ProviderTest",
  z.strictObject({
    ok: z.boolean().describe("whether the provider answered as it should"),
    latency_ms: int.nonnegative().describe("from sending the request to its answer or failure"),
    model: z.string().describe("the upstream model asked"),
    status: int
      .nullable()
      .describe("the upstream's HTTP status when it refused; null: it answered, or never did"),
    error: z
      .string()
      .nullable()
      .describe("what went wrong, in the gateway's words (never the upstream's key)"),
  }),
);

export const accountList = named(answerSchemas, "AccountList", list(accountAnswer));
export const providerTestBody = named(
  requestSchemas,
  "ProviderTestRequest",
  z.strictObject({
    model: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe("the upstream model to ask; default: the first deployment's on this provider"),
  }),
);
export const catalogStateAnswer = named(
  answerSchemas,
  "CatalogState",
  z.strictObject({
    source: z.enum(["file", "store"]).describe("where providers, models and plans are managed"),
    revision: int
      .nonnegative()
      .nullable()
      .describe("the store's catalog revision, which every instance follows; null: the file is the source"),
  }),
);
export const providerKeyStateList = named(
  answerSchemas,
  "ProviderKeyStateList",
  list(providerKeyStateAnswer),
);
export const keyList = named(answerSchemas, "KeyList", list(keyAnswer));
export const userList = named(answerSchemas, "UserList", list(userAnswer));
export const recordList = named(answerSchemas, "RecordList", list(recordAnswer));
export const ticketList = named(answerSchemas, "TicketList", list(ticketAnswer));
export const sessionList = named(answerSchemas, "SessionList", list(sessionAnswer));
export const adminTokenList = named(answerSchemas, "AdminTokenList", list(adminTokenAnswer));
export const auditList = named(answerSchemas, "AuditList", list(auditEntryAnswer));

export const errorAnswer = named(
  answerSchemas,
  "Error",
  z.strictObject({
    error: z.strictObject({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable().describe("the parameter at fault, where there is one"),
      code: z.string().describe("the error catalog's code (docs/errors.md)"),
    }),
  }),
);

/** The OpenAPI document itself: an object, described by the OpenAPI 3.1 specification. */
export const openApiAnswer = named(answerSchemas, "OpenApiDocument", z.record(z.string(), z.unknown()));
