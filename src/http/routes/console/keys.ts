// The account's API keys: list (everyone), create, change and delete (owners and admins).
// Every change bumps the store's revision (other instances drop their key caches within a
// poll) and clears this instance's cache at once, so /v1 honours it on the next request;
// each is written to the audit log with the user who made it.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { createKey, deleteKey, listKeys, updateKey } from "../../../accounts/keys.ts";
import type { KeyAnswer, KeyCreated, KeyView, List } from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import {
  allowedModels,
  checkModels,
  keyName,
  limitTokens,
  sessionBudgetNanos,
  sessionLimitTokens,
} from "../fields.ts";
import {
  accountFor,
  accountQuery,
  idParam,
  keyView,
  notFound,
  parseInput,
  requireRole,
  userActor,
  userOf,
} from "./context.ts";

const scopeQuery = z.object(accountQuery).strict();
// A session cap only narrows what the key's own limit and budgets allow, so whoever may set
// the key's limit may set it, money included.
const createBody = z
  .object({
    name: keyName.optional(),
    limit_tokens: limitTokens.optional(),
    allowed_models: allowedModels.optional(),
    session_limit_tokens: sessionLimitTokens.optional(),
    session_budget_nanos: sessionBudgetNanos.optional(),
  })
  .strict();
const patchBody = z
  .object({
    name: keyName.optional(),
    limit_tokens: limitTokens.optional(),
    allowed_models: allowedModels.optional(),
    session_limit_tokens: sessionLimitTokens.optional(),
    session_budget_nanos: sessionBudgetNanos.optional(),
    disabled: z.boolean().optional(),
  })
  .strict()
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message:
      "give at least one of name, limit_tokens, allowed_models, session_limit_tokens, session_budget_nanos, disabled",
  });
const keyPath = z.object({ id: z.string() }).strict();

export async function keyRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  /** The account's live key with this id, or not_found. */
  async function keyOf(accountId: string, id: string) {
    const key = idParam.safeParse(id).success
      ? (await listKeys(deps.store.db, accountId)).find((k) => k.id === id)
      : undefined;
    if (!key) throw notFound("key");
    return key;
  }

  app.get("/keys", async (request): Promise<List<KeyView>> => {
    const query = parseInput(scopeQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), query.account);
    const keys = await listKeys(deps.store.db, account.id);
    return { data: keys.reverse().map(keyView) };
  });

  app.post("/keys", async (request, reply) => {
    const query = parseInput(scopeQuery, request.query, "query");
    const user = userOf(request);
    const account = await accountFor(deps, user, query.account);
    requireRole(user, "owner");
    const body = parseInput(createBody, request.body, "body");
    checkModels(deps, account.plan_id, body.allowed_models);
    const { key, secret } = await createKey(
      deps.store.db,
      {
        account_id: account.id,
        name: body.name ?? null,
        limit_tokens: body.limit_tokens ?? null,
        allowed_models: body.allowed_models ?? null,
        session_limit_tokens: body.session_limit_tokens ?? null,
        session_budget_nanos: body.session_budget_nanos ?? null,
      },
      userActor(request),
    );
    deps.keys.clear();
    return reply.code(201).send({ key: keyView(key), secret } satisfies KeyCreated);
  });

  app.patch("/keys/:id", async (request): Promise<KeyAnswer> => {
    const query = parseInput(scopeQuery, request.query, "query");
    const { id } = parseInput(keyPath, request.params, "query");
    const user = userOf(request);
    const account = await accountFor(deps, user, query.account);
    const key = await keyOf(account.id, id);
    requireRole(user, "owner");
    const body = parseInput(patchBody, request.body, "body");
    checkModels(deps, account.plan_id, body.allowed_models);
    await updateKey(deps.store.db, key.id, body, userActor(request));
    deps.keys.clear();
    return { key: keyView(await keyOf(account.id, key.id)) };
  });

  app.delete("/keys/:id", async (request, reply) => {
    const query = parseInput(scopeQuery, request.query, "query");
    const { id } = parseInput(keyPath, request.params, "query");
    const user = userOf(request);
    const account = await accountFor(deps, user, query.account);
    const key = await keyOf(account.id, id);
    requireRole(user, "owner");
    if (!(await deleteKey(deps.store.db, key.id, userActor(request)))) throw notFound("key");
    deps.keys.clear();
    return reply.code(204).send();
  });
}
