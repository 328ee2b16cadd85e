// Accounts, keys and users through the admin API: the console's store functions (src/accounts/),
// each change written to the audit log with its caller in its own transaction. Changes to
// accounts and keys also clear this instance's key cache at once (the revision bump reaches the
// others within a poll), so /v1 honours them on the next request.
import type { FastifyInstance } from "fastify";
import { type Account, createAccount, listAccounts, updateAccount } from "../../../accounts/accounts.ts";
import { type ApiKey, createKey, deleteKey, listEveryKey, updateKey } from "../../../accounts/keys.ts";
import { createUser, findUserById, listUsers, locksOutSelf, updateUser } from "../../../accounts/users.ts";
import { GatewayError } from "../../../errors/index.ts";
import type { AdminKey } from "../../../views/admin.ts";
import type { GatewayDeps } from "../../deps.ts";
import {
  accountView,
  adminKeyView,
  findAccountById,
  idParam,
  notFound,
  userView,
} from "../console/context.ts";
import { badParam, changeRefused, checkModels, checkPlan } from "../fields.ts";
import { route } from "./contract.ts";
import { operations as ops } from "./operations.ts";

/** A list answered whole: nothing more to page through. */
export function whole<T>(data: T[]) {
  return { object: "list" as const, data, has_more: false, next_cursor: null };
}

function keyView(k: ApiKey & { account_name: string }): AdminKey {
  return { ...adminKeyView(k), rpm_limit: k.rpm_limit, tpm_limit: k.tpm_limit };
}

export async function accountRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const db = deps.store.db;

  async function accountOf(id: string): Promise<Account> {
    const account = idParam.safeParse(id).success ? await findAccountById(deps, id) : undefined;
    if (!account) throw notFound("account");
    return account;
  }

  /** A live key with its account's name, or not_found. */
  async function keyOf(id: string) {
    const key = idParam.safeParse(id).success ? (await listEveryKey(db, { keyId: id }))[0] : undefined;
    if (!key) throw notFound("key");
    return key;
  }

  route(app, ops.listAccounts, async () => whole((await listAccounts(db)).map((a) => accountView(deps, a))));

  route(app, ops.createAccount, async ({ body, caller }) => {
    checkPlan(deps, body.plan_id);
    const account = await createAccount(
      db,
      {
        name: body.name,
        plan_id: body.plan_id ?? deps.config.default_plan,
        quota_tokens: body.quota_tokens ?? null,
      },
      caller.actor,
    ).catch(changeRefused);
    return accountView(deps, account);
  });

  route(app, ops.getAccount, async ({ id }) => accountView(deps, await accountOf(id)));

  route(app, ops.updateAccount, async ({ id, body, caller }) => {
    const account = await accountOf(id);
    checkPlan(deps, body.plan_id);
    const updated = await updateAccount(db, account.id, body, caller.actor).catch(changeRefused);
    if (!updated) throw notFound("account");
    deps.keys.clear();
    return accountView(deps, updated);
  });

  route(app, ops.listKeys, async ({ query }) =>
    whole((await listEveryKey(db, { accountId: query.account })).map(keyView)),
  );

  route(app, ops.createKey, async ({ body, caller }) => {
    const account = idParam.safeParse(body.account_id).success
      ? await findAccountById(deps, body.account_id)
      : undefined;
    if (!account) throw badParam("account_id", "no such account");
    checkModels(deps, account.plan_id, body.allowed_models);
    const { account_id: _, ...settings } = body;
    const { key, secret } = await createKey(db, { account_id: account.id, ...settings }, caller.actor).catch(
      changeRefused,
    );
    deps.keys.clear();
    return { ...keyView({ ...key, account_name: account.name }), secret };
  });

  route(app, ops.getKey, async ({ id }) => keyView(await keyOf(id)));

  route(app, ops.updateKey, async ({ id, body, caller }) => {
    const key = await keyOf(id);
    const account = await findAccountById(deps, key.account_id);
    if (account) checkModels(deps, account.plan_id, body.allowed_models);
    if (!(await updateKey(db, key.id, body, caller.actor).catch(changeRefused))) throw notFound("key");
    deps.keys.clear();
    return keyView(await keyOf(key.id));
  });

  route(app, ops.deleteKey, async ({ id, caller }) => {
    const key = await keyOf(id);
    if (!(await deleteKey(db, key.id, caller.actor))) throw notFound("key");
    deps.keys.clear();
    return undefined;
  });

  route(app, ops.listUsers, async ({ query }) =>
    whole(
      (await listUsers(db, query.account === undefined ? {} : { account_id: query.account })).map(userView),
    ),
  );

  route(app, ops.createUser, async ({ body, caller }) => {
    if (!(await findAccountById(deps, body.account_id))) throw badParam("account_id", "no such account");
    return userView(await createUser(db, body, caller.actor).catch(changeRefused));
  });

  route(app, ops.getUser, async ({ id }) => {
    const user = idParam.safeParse(id).success ? await findUserById(db, id) : undefined;
    if (!user) throw notFound("user");
    return userView(user);
  });

  route(app, ops.updateUser, async ({ id, body, caller }) => {
    const target = idParam.safeParse(id).success ? await findUserById(db, id) : undefined;
    if (!target) throw notFound("user");
    // only a session has a self to lock out; a token is no user
    if (locksOutSelf(caller.userId, target.id, body))
      throw new GatewayError("conflict", {
        message: "You cannot remove your own admin role or disable yourself; another admin can.",
      });
    const user = await updateUser(db, target.id, body, caller.actor).catch(changeRefused);
    if (!user) throw notFound("user");
    return userView(user);
  });
}
