// Administration (role admin): every account (create, plan, quota, budget, disable), every
// key's budget, and every user. Account and key changes bump the store's revision and clear
// this instance's key cache, so /v1 sees a disabled account, a new quota or a budget at once.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { createAccount, listAccounts, updateAccount } from "../../../accounts/accounts.ts";
import { setBudget } from "../../../accounts/budgets.ts";
import { LookupError } from "../../../accounts/errors.ts";
import { listEveryKey } from "../../../accounts/keys.ts";
import { PASSWORD_MAX_LENGTH } from "../../../accounts/password.ts";
import { ROLES } from "../../../accounts/roles.ts";
import {
  ConflictError,
  createUser,
  findUserById,
  listUsers,
  UserInputError,
  updateUser,
} from "../../../accounts/users.ts";
import { GatewayError } from "../../../errors/index.ts";
import { BudgetChangeError, type BudgetColumns, changedBudget } from "../../../prices/budgets.ts";
import { BUDGET_PERIODS, type BudgetPeriod } from "../../../prices/period.ts";
import { MAX_BUDGET_NANOS } from "../../../prices/usd.ts";
import type {
  AccountAnswer,
  AccountView,
  AdminKeyAnswer,
  AdminKeyView,
  List,
  UserAnswer,
  UserView,
} from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import {
  accountView,
  adminKeyView,
  findAccountById,
  idParam,
  notFound,
  parseInput,
  requireRole,
  userOf,
  userView,
} from "./context.ts";

const noQuery = z.object({}).strict();
const idPath = z.object({ id: z.string() }).strict();
const quota = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** A money budget in nanodollars; null: none. */
const budgetNanos = z
  .number()
  .int("must be a whole number of nanodollars")
  .nonnegative()
  .max(MAX_BUDGET_NANOS, `must be at most ${MAX_BUDGET_NANOS} nanodollars ($9,000,000)`)
  .nullable();
const budgetPeriod = z.enum(BUDGET_PERIODS);

const accountCreate = z
  .object({
    name: z.string().trim().min(1).max(100),
    plan_id: z.string().min(1).max(128).optional(),
    quota_tokens: quota.nullable().optional(),
  })
  .strict();
const accountPatch = z
  .object({
    plan_id: z.string().min(1).max(128).optional(),
    quota_tokens: quota.nullable().optional(),
    disabled: z.boolean().optional(),
    budget_nanos: budgetNanos.optional(),
    budget_period: budgetPeriod.optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: "give at least one of plan_id, quota_tokens, disabled, budget_nanos, budget_period",
  });

const keysQuery = z.object({ account: idParam.optional() }).strict();
const keyBudgetPatch = z
  .object({ budget_nanos: budgetNanos.optional(), budget_period: budgetPeriod.optional() })
  .strict()
  .refine((b) => b.budget_nanos !== undefined || b.budget_period !== undefined, {
    message: "give at least one of budget_nanos, budget_period",
  });

/**
 * The budget a change leaves (undefined: the change has none), or invalid_request naming
 * budget_period when a period is given without an amount to apply to.
 */
function budgetAfter(
  current: BudgetColumns,
  change: { budget_nanos?: number | null | undefined; budget_period?: BudgetPeriod | undefined },
): { nanos: number | null; period: BudgetPeriod } | undefined {
  if (change.budget_nanos === undefined && change.budget_period === undefined) return undefined;
  try {
    return changedBudget(current, { nanos: change.budget_nanos, period: change.budget_period });
  } catch (err) {
    if (err instanceof BudgetChangeError)
      throw new GatewayError("invalid_request", {
        message: `Invalid parameter 'budget_period': ${err.message}.`,
        param: "budget_period",
      });
    throw err;
  }
}

const usersQuery = z.object({ account: idParam.optional() }).strict();
const password = z.string().min(1).max(PASSWORD_MAX_LENGTH);
const userCreate = z
  .object({
    email: z.string().min(1).max(320),
    account_id: idParam,
    role: z.enum(ROLES),
    password,
  })
  .strict();
const userPatch = z
  .object({ role: z.enum(ROLES).optional(), password: password.optional(), disabled: z.boolean().optional() })
  .strict()
  .refine((b) => b.role !== undefined || b.password !== undefined || b.disabled !== undefined, {
    message: "give at least one of role, password, disabled",
  });

/** invalid_request naming the field a user change got wrong. */
function userInput(err: unknown): never {
  if (err instanceof UserInputError)
    throw new GatewayError("invalid_request", {
      message: `Invalid parameter '${err.field}': ${err.message}.`,
      param: err.field,
    });
  if (err instanceof ConflictError) throw new GatewayError("conflict", { message: err.message });
  throw err;
}

export async function adminRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  // before the body is read: a non-admin learns nothing about what the call would have done
  app.addHook("onRequest", async (request: FastifyRequest) => {
    requireRole(userOf(request), "admin");
  });

  function checkPlan(plan: string | undefined): void {
    if (plan !== undefined && !deps.registry.plans.get(plan))
      throw new GatewayError("invalid_request", {
        message: `Invalid parameter 'plan_id': no plan "${plan}" (plans: ${deps.config.plans.map((p) => p.id).join(", ")}).`,
        param: "plan_id",
      });
  }

  app.get("/admin/accounts", async (request): Promise<List<AccountView>> => {
    parseInput(noQuery, request.query, "query");
    return { data: (await listAccounts(deps.store.db)).map((a) => accountView(deps, a)) };
  });

  app.post("/admin/accounts", async (request, reply) => {
    parseInput(noQuery, request.query, "query");
    const body = parseInput(accountCreate, request.body, "body");
    checkPlan(body.plan_id);
    try {
      const account = await createAccount(deps.store.db, {
        name: body.name,
        plan_id: body.plan_id ?? deps.config.default_plan,
        quota_tokens: body.quota_tokens ?? null,
      });
      return reply.code(201).send({ account: accountView(deps, account) } satisfies AccountAnswer);
    } catch (err) {
      // the only LookupError createAccount throws: the name is taken
      if (err instanceof LookupError)
        throw new GatewayError("conflict", { message: err.message, param: "name" });
      throw err;
    }
  });

  app.patch("/admin/accounts/:id", async (request): Promise<AccountAnswer> => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(idPath, request.params, "query");
    const account = idParam.safeParse(id).success ? await findAccountById(deps, id) : undefined;
    if (!account) throw notFound("account");
    const body = parseInput(accountPatch, request.body, "body");
    checkPlan(body.plan_id);
    const budget = budgetAfter(account, body);
    await updateAccount(deps.store.db, account.id, {
      ...(body.plan_id === undefined ? {} : { plan_id: body.plan_id }),
      ...(body.quota_tokens === undefined ? {} : { quota_tokens: body.quota_tokens }),
      ...(body.disabled === undefined ? {} : { disabled: body.disabled }),
    });
    if (budget) await setBudget(deps.store.db, "accounts", account.id, budget.nanos, budget.period);
    deps.keys.clear();
    return { account: accountView(deps, (await findAccountById(deps, account.id))!) };
  });

  app.get("/admin/keys", async (request): Promise<List<AdminKeyView>> => {
    const q = parseInput(keysQuery, request.query, "query");
    return { data: (await listEveryKey(deps.store.db, { accountId: q.account })).map(adminKeyView) };
  });

  app.patch("/admin/keys/:id", async (request): Promise<AdminKeyAnswer> => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(idPath, request.params, "query");
    const keyOf = async () =>
      idParam.safeParse(id).success ? (await listEveryKey(deps.store.db, { keyId: id }))[0] : undefined;
    const key = await keyOf();
    if (!key) throw notFound("key");
    // the schema asks for at least one of the two fields, so there is a budget to set
    const budget = budgetAfter(key, parseInput(keyBudgetPatch, request.body, "body"))!;
    await setBudget(deps.store.db, "api_keys", key.id, budget.nanos, budget.period);
    deps.keys.clear();
    return { key: adminKeyView((await keyOf())!) };
  });

  app.get("/admin/users", async (request): Promise<List<UserView>> => {
    const q = parseInput(usersQuery, request.query, "query");
    return { data: (await listUsers(deps.store.db, { account_id: q.account })).map(userView) };
  });

  app.post("/admin/users", async (request, reply) => {
    parseInput(noQuery, request.query, "query");
    const body = parseInput(userCreate, request.body, "body");
    if (!(await findAccountById(deps, body.account_id)))
      throw new GatewayError("invalid_request", {
        message: "Invalid parameter 'account_id': no such account.",
        param: "account_id",
      });
    const user = await createUser(deps.store.db, body).catch(userInput);
    return reply.code(201).send({ user: userView(user) } satisfies UserAnswer);
  });

  app.patch("/admin/users/:id", async (request): Promise<UserAnswer> => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(idPath, request.params, "query");
    const target = idParam.safeParse(id).success ? await findUserById(deps.store.db, id) : undefined;
    if (!target) throw notFound("user");
    const body = parseInput(userPatch, request.body, "body");
    // An admin cannot lock themselves out; another admin can change them.
    if (target.id === userOf(request).id && ((body.role && body.role !== "admin") || body.disabled))
      throw new GatewayError("conflict", {
        message: "You cannot remove your own admin role or disable yourself; another admin can.",
      });
    const user = await updateUser(deps.store.db, target.id, body).catch(userInput);
    if (!user) throw notFound("user");
    return { user: userView(user) };
  });
}
