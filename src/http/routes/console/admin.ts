// Administration (role admin): every account (create, plan, quota, budget, disable), every
// key's budget, and every user. Account and key changes bump the store's revision and clear
// this instance's key cache, so /v1 sees a disabled account, a new quota or a budget at once.
import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { createAccount, listAccounts, updateAccount } from "../../../accounts/accounts.ts";
import { listEveryKey, updateKey } from "../../../accounts/keys.ts";
import { ROLES } from "../../../accounts/roles.ts";
import { createUser, findUserById, listUsers, locksOutSelf, updateUser } from "../../../accounts/users.ts";
import { GatewayError } from "../../../errors/index.ts";
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
  accountName,
  budgetNanos,
  budgetPeriod,
  changeRefused,
  checkPlan,
  password,
  planId,
  quota,
} from "../fields.ts";
import {
  accountView,
  adminKeyView,
  findAccountById,
  idParam,
  notFound,
  parseInput,
  requireRole,
  userActor,
  userOf,
  userView,
} from "./context.ts";

const noQuery = z.object({}).strict();
const idPath = z.object({ id: z.string() }).strict();

const accountCreate = z
  .object({
    name: accountName,
    plan_id: planId.optional(),
    quota_tokens: quota.nullable().optional(),
  })
  .strict();
const accountPatch = z
  .object({
    plan_id: planId.optional(),
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

const usersQuery = z.object({ account: idParam.optional() }).strict();
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

export async function adminRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  // before the body is read: a non-admin learns nothing about what the call would have done
  app.addHook("onRequest", async (request: FastifyRequest) => {
    requireRole(userOf(request), "admin");
  });

  app.get("/admin/accounts", async (request): Promise<List<AccountView>> => {
    parseInput(noQuery, request.query, "query");
    return { data: (await listAccounts(deps.store.db)).map((a) => accountView(deps, a)) };
  });

  app.post("/admin/accounts", async (request, reply) => {
    parseInput(noQuery, request.query, "query");
    const body = parseInput(accountCreate, request.body, "body");
    checkPlan(deps, body.plan_id);
    const account = await createAccount(
      deps.store.db,
      {
        name: body.name,
        plan_id: body.plan_id ?? deps.config.default_plan,
        quota_tokens: body.quota_tokens ?? null,
      },
      userActor(request),
    ).catch(changeRefused);
    return reply.code(201).send({ account: accountView(deps, account) } satisfies AccountAnswer);
  });

  app.patch("/admin/accounts/:id", async (request): Promise<AccountAnswer> => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(idPath, request.params, "query");
    const account = idParam.safeParse(id).success ? await findAccountById(deps, id) : undefined;
    if (!account) throw notFound("account");
    const body = parseInput(accountPatch, request.body, "body");
    checkPlan(deps, body.plan_id);
    const updated = await updateAccount(deps.store.db, account.id, body, userActor(request)).catch(
      changeRefused,
    );
    if (!updated) throw notFound("account");
    deps.keys.clear();
    return { account: accountView(deps, updated) };
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
    const body = parseInput(keyBudgetPatch, request.body, "body");
    await updateKey(deps.store.db, key.id, body, userActor(request)).catch(changeRefused);
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
    const user = await createUser(deps.store.db, body, userActor(request)).catch(changeRefused);
    return reply.code(201).send({ user: userView(user) } satisfies UserAnswer);
  });

  app.patch("/admin/users/:id", async (request): Promise<UserAnswer> => {
    parseInput(noQuery, request.query, "query");
    const { id } = parseInput(idPath, request.params, "query");
    const target = idParam.safeParse(id).success ? await findUserById(deps.store.db, id) : undefined;
    if (!target) throw notFound("user");
    const body = parseInput(userPatch, request.body, "body");
    // An admin cannot lock themselves out; another admin can change them.
    if (locksOutSelf(userOf(request).id, target.id, body))
      throw new GatewayError("conflict", {
        message: "You cannot remove your own admin role or disable yourself; another admin can.",
      });
    const user = await updateUser(deps.store.db, target.id, body, userActor(request)).catch(changeRefused);
    if (!user) throw notFound("user");
    return { user: userView(user) };
  });
}
