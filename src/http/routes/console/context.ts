// What every console route shares: the session user on the request, input validation with
// zod (strict: an unknown field is a 400 naming it), the account a call acts on, role checks,
// and the builders of the JSON shapes (their types are in src/views/console.ts).
import type { TLSSocket } from "node:tls";
import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { z } from "zod";
import type { Account } from "../../../accounts/accounts.ts";
import type { ApiKey } from "../../../accounts/keys.ts";
import type { Role } from "../../../accounts/roles.ts";
import type { User } from "../../../accounts/users.ts";
import type { PlanConfig } from "../../../config/schema.ts";
import { GatewayError } from "../../../errors/index.ts";
import { type BudgetColumns, budgetStatus } from "../../../prices/budgets.ts";
import type { Database } from "../../../store/schema.ts";
import type {
  AccountView,
  AdminKeyView,
  BudgetView,
  KeyView,
  PlanView,
  UserView,
} from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the console user of the session cookie, once the console's session hook passed */
    consoleUser: User | null;
  }
}

function paramName(path: PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${String(p)}` : String(p))).join("");
}

/**
 * Validates a body or a query string; throws invalid_request naming the first bad parameter.
 * A missing body counts as an empty object, so calls whose fields are all optional need none.
 */
export function parseInput<T extends z.ZodType>(
  schema: T,
  value: unknown,
  what: "body" | "query",
): z.output<T> {
  const input = value ?? {};
  if (typeof input !== "object" || Array.isArray(input))
    throw new GatewayError("invalid_request", {
      message: what === "body" ? "The request body must be a JSON object." : "The query string is not valid.",
    });
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  if (issue.code === "unrecognized_keys") {
    const param = paramName([...issue.path, issue.keys[0]!]);
    throw new GatewayError("invalid_request", {
      message: `Unknown parameter '${param}'.`,
      param,
    });
  }
  const param = paramName(issue.path);
  throw new GatewayError("invalid_request", {
    message: param ? `Invalid parameter '${param}': ${issue.message}.` : `Invalid request: ${issue.message}.`,
    param: param || null,
  });
}

/** A whole number in a query string, within bounds. */
export function queryInt(min: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,15}$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** Ids in paths and query strings: what our ids look like, with room to spare. */
export const idParam = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_-]+$/, "is not an id");

/** `?account=<id>` of the account views. */
export const accountQuery = { account: idParam.optional() };

export function notFound(what: string, param: string | null = null): GatewayError {
  return new GatewayError("not_found", { message: `No such ${what}.`, param });
}

export function forbidden(message = "Your role does not allow this."): GatewayError {
  return new GatewayError("console_forbidden", { message });
}

/** The session user; the session hook guarantees it on every route but login and logout. */
export function userOf(request: FastifyRequest): User {
  const user = request.consoleUser;
  if (!user) throw new GatewayError("console_unauthenticated");
  return user;
}

/** Who the audit log says made a change through the console. */
export function userActor(request: FastifyRequest): string {
  return `user:${userOf(request).email}`;
}

/** Owners and admins manage an account's keys and close its tickets. */
export function requireRole(user: User, role: Exclude<Role, "member">): void {
  const allowed = role === "owner" ? user.role === "owner" || user.role === "admin" : user.role === "admin";
  if (!allowed)
    throw forbidden(
      role === "owner" ? "Only the account's owners (and admins) may do this." : "Only admins may do this.",
    );
}

async function accountById(db: Kysely<Database>, id: string): Promise<Account | undefined> {
  return db.selectFrom("accounts").selectAll().where("id", "=", id).executeTakeFirst();
}

/**
 * The account a call acts on: the user's own, or for an admin the one `?account=` names. A
 * non-admin naming another account gets not_found, exactly as for an account that does not
 * exist, so account ids cannot be probed.
 */
export async function accountFor(deps: GatewayDeps, user: User, ref: string | undefined): Promise<Account> {
  if (ref !== undefined && ref !== user.account_id && user.role !== "admin")
    throw notFound("account", "account");
  const account = await accountById(deps.store.db, ref ?? user.account_id);
  if (!account) throw notFound("account", ref === undefined ? null : "account");
  return account;
}

export async function findAccountById(deps: GatewayDeps, id: string): Promise<Account | undefined> {
  return accountById(deps.store.db, id);
}

/** Whether the request came over TLS on the gateway's own socket (never a forwarded header). */
export function overTls(request: FastifyRequest): boolean {
  return (request.raw.socket as TLSSocket).encrypted === true;
}

// Store rows as the API shows them: flags are 0/1 in the store, booleans in the views.

export function userView(u: User): UserView {
  return {
    id: u.id,
    email: u.email,
    role: u.role,
    account_id: u.account_id,
    disabled: u.disabled === 1,
    created_at: Number(u.created_at),
  };
}

export function budgetView(row: BudgetColumns, now = Date.now()): BudgetView {
  const s = budgetStatus(row, now);
  return {
    budget_nanos: s.budget,
    budget_period: s.period,
    spent_nanos: s.spent,
    left_nanos: s.left,
    budget_resets_at: s.resetsAt,
  };
}

export function accountView(deps: GatewayDeps, a: Account): AccountView {
  const quota = a.quota_tokens ?? deps.registry.plans.get(a.plan_id)?.quota_tokens ?? 0;
  const used = Number(a.used_tokens);
  return {
    id: a.id,
    name: a.name,
    plan_id: a.plan_id,
    quota_tokens: Number(quota),
    quota_source: a.quota_tokens === null ? "plan" : "account",
    used_tokens: used,
    remaining_tokens: Math.max(0, Number(quota) - used),
    ...budgetView(a),
    disabled: Number(a.disabled) === 1,
    created_at: Number(a.created_at),
  };
}

export function planView(p: PlanConfig): PlanView {
  return {
    id: p.id,
    quota_tokens: p.quota_tokens,
    models: p.models,
    rate_limits: {
      key: { rpm: p.rate_limits.key.rpm ?? null, tpm: p.rate_limits.key.tpm ?? null },
      account: { rpm: p.rate_limits.account.rpm ?? null, tpm: p.rate_limits.account.tpm ?? null },
    },
  };
}

export function keyView(k: ApiKey): KeyView {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    limit_tokens: k.limit_tokens === null ? null : Number(k.limit_tokens),
    used_tokens: Number(k.used_tokens),
    allowed_models: k.allowed_models === null ? null : [...k.allowed_models],
    session_limit_tokens: k.session_limit_tokens === null ? null : Number(k.session_limit_tokens),
    session_budget_nanos: k.session_budget_nanos === null ? null : Number(k.session_budget_nanos),
    ...budgetView(k),
    disabled: Number(k.disabled) === 1,
    created_at: Number(k.created_at),
  };
}

export function adminKeyView(k: ApiKey & { account_name: string }): AdminKeyView {
  return { ...keyView(k), account_id: k.account_id, account_name: k.account_name };
}
