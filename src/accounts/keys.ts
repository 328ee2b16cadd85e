// API keys in the store: created with their secret shown once and only its hash kept, found by
// that hash to authenticate, limited and disabled. Each change bumps the revision
// (revision.ts), since every instance caches keys by their secret; a change given an actor
// is written to the audit log in its own transaction.
import type { Kysely, Transaction } from "kysely";
import { lockRow } from "../audit/lock.ts";
import { writeAudit } from "../audit/log.ts";
import { changedBudget } from "../prices/budgets.ts";
import type { BudgetPeriod } from "../prices/period.ts";
import type { Database } from "../store/schema.ts";
import type { Account } from "./accounts.ts";
import { LookupError } from "./errors.ts";
import { generateKey, newId } from "./key-format.ts";
import { bumpRevision } from "./revision.ts";

type Db = Kysely<Database>;

export interface ApiKey {
  id: string;
  account_id: string;
  name: string | null;
  prefix: string;
  limit_tokens: number | null;
  used_tokens: number;
  /** money budget in nanodollars (null: none), its period, and what was spent (src/prices/period.ts) */
  budget_nanos: number | null;
  budget_period: string;
  spent_nanos: number;
  month_spent_nanos: number;
  spent_month: string;
  disabled: number;
  created_at: number;
  /** own requests per minute; null: the plan's default */
  rpm_limit: number | null;
  /** own tokens per minute; null: the plan's default */
  tpm_limit: number | null;
  /** the public models the key may call, within its plan's; null: every model of the plan */
  allowed_models: readonly string[] | null;
  /**
   * what each agent session of the key may use over its whole life: tokens, and nanodollars;
   * null: no cap (docs/accounting.md)
   */
  session_limit_tokens: number | null;
  session_budget_nanos: number | null;
}

/** What an operator sets on a key; left out: unchanged (or, creating one, the default). */
export interface KeySettings {
  name?: string | null;
  limit_tokens?: number | null;
  rpm_limit?: number | null;
  tpm_limit?: number | null;
  allowed_models?: readonly string[] | null;
  disabled?: boolean;
  /** null: no budget; with budget_period, the rule of src/prices/budgets.ts (changedBudget) */
  budget_nanos?: number | null;
  budget_period?: BudgetPeriod;
  /** each agent session's cap in tokens, and in nanodollars; null: none */
  session_limit_tokens?: number | null;
  session_budget_nanos?: number | null;
}

const keyColumns = [
  "id",
  "account_id",
  "name",
  "prefix",
  "limit_tokens",
  "used_tokens",
  "budget_nanos",
  "budget_period",
  "spent_nanos",
  "month_spent_nanos",
  "spent_month",
  "disabled",
  "created_at",
  "rpm_limit",
  "tpm_limit",
  "allowed_models",
  "session_limit_tokens",
  "session_budget_nanos",
] as const;

type KeyRow = Omit<ApiKey, "allowed_models"> & { allowed_models: string | null };

/** The stored JSON list of models as the key carries it. */
export function parseModels(text: string | null): string[] | null {
  if (text === null) return null;
  const list = JSON.parse(text) as unknown;
  return Array.isArray(list) ? list.filter((m): m is string => typeof m === "string") : null;
}

function modelsColumn(models: readonly string[] | null): string | null {
  return models === null ? null : JSON.stringify([...new Set(models)]);
}

function asKey<T extends KeyRow>(row: T): Omit<T, "allowed_models"> & ApiKey {
  return { ...row, allowed_models: parseModels(row.allowed_models) };
}

/**
 * A key as the audit log records it: what an operator sets, never its hash (the secret
 * itself is never stored at all).
 */
export function keyAudit(k: ApiKey & { deleted_at?: number | null }) {
  return {
    id: k.id,
    account_id: k.account_id,
    name: k.name,
    prefix: k.prefix,
    limit_tokens: k.limit_tokens === null ? null : Number(k.limit_tokens),
    rpm_limit: k.rpm_limit,
    tpm_limit: k.tpm_limit,
    allowed_models: k.allowed_models,
    budget_nanos: k.budget_nanos === null ? null : Number(k.budget_nanos),
    budget_period: k.budget_period,
    session_limit_tokens: k.session_limit_tokens === null ? null : Number(k.session_limit_tokens),
    session_budget_nanos: k.session_budget_nanos === null ? null : Number(k.session_budget_nanos),
    disabled: Number(k.disabled) === 1,
    ...(k.deleted_at === undefined ? {} : { deleted: k.deleted_at !== null }),
  };
}

async function keyRow(db: Db | Transaction<Database>, id: string) {
  const row = await db
    .selectFrom("api_keys")
    .select([...keyColumns, "deleted_at"])
    .where("id", "=", id)
    .executeTakeFirst();
  return row && asKey(row);
}

export async function createKey(
  db: Db,
  input: { account_id: string } & Omit<KeySettings, "disabled">,
  actor?: string,
): Promise<{ key: ApiKey; secret: string }> {
  const { secret, hash, prefix } = generateKey();
  const budget =
    input.budget_nanos === undefined && input.budget_period === undefined
      ? undefined
      : changedBudget(
          { budget_nanos: null, budget_period: "none" },
          { nanos: input.budget_nanos, period: input.budget_period },
        );
  const key = {
    id: newId("key"),
    account_id: input.account_id,
    name: input.name ?? null,
    prefix,
    limit_tokens: input.limit_tokens ?? null,
    rpm_limit: input.rpm_limit ?? null,
    tpm_limit: input.tpm_limit ?? null,
    session_limit_tokens: input.session_limit_tokens ?? null,
    session_budget_nanos: input.session_budget_nanos ?? null,
    created_at: Date.now(),
  };
  const allowed = input.allowed_models === undefined ? null : modelsColumn(input.allowed_models);
  const created = await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("api_keys")
      .values({
        ...key,
        secret_hash: hash,
        allowed_models: allowed,
        ...(budget && { budget_nanos: budget.nanos, budget_period: budget.period }),
      })
      .execute();
    const row = (await keyRow(trx, key.id))!;
    await bumpRevision(trx);
    if (actor)
      await writeAudit(trx, {
        actor,
        action: "create",
        resource: "keys",
        resourceId: key.id,
        after: keyAudit(row),
      });
    return row;
  });
  const { deleted_at: _, ...fresh } = created;
  return { key: fresh, secret };
}

/** The account's keys, deleted ones left out. */
export async function listKeys(db: Db, accountId: string): Promise<ApiKey[]> {
  const rows = await db
    .selectFrom("api_keys")
    .select(keyColumns)
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map(asKey);
}

/** A key by id, or by name when exactly one key has that name. */
export async function findKey(db: Db, ref: string): Promise<ApiKey> {
  const rows = await db
    .selectFrom("api_keys")
    .select(keyColumns)
    .where((eb) => eb.or([eb("id", "=", ref), eb("name", "=", ref)]))
    .limit(3)
    .execute();
  const byId = rows.find((r) => r.id === ref);
  if (byId) return asKey(byId);
  if (rows.length > 1) throw new LookupError(`several keys are named "${ref}"; name the key by its id`);
  if (!rows[0]) throw new LookupError(`no key with id or name "${ref}"`);
  return asKey(rows[0]);
}

/**
 * Changes a key; returns it as it is now, or undefined when there is no such key. A budget
 * change is worked out from the budget the transaction found (BudgetChangeError when a
 * monthly period is given without an amount to apply to).
 */
export async function updateKey(
  db: Db,
  id: string,
  changes: KeySettings,
  actor?: string,
): Promise<ApiKey | undefined> {
  const set: Partial<
    Record<
      | "name"
      | "disabled"
      | "limit_tokens"
      | "rpm_limit"
      | "tpm_limit"
      | "allowed_models"
      | "budget_nanos"
      | "budget_period"
      | "session_limit_tokens"
      | "session_budget_nanos",
      any
    >
  > = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.disabled !== undefined) set.disabled = changes.disabled ? 1 : 0;
  if (changes.limit_tokens !== undefined) set.limit_tokens = changes.limit_tokens;
  if (changes.rpm_limit !== undefined) set.rpm_limit = changes.rpm_limit;
  if (changes.tpm_limit !== undefined) set.tpm_limit = changes.tpm_limit;
  if (changes.allowed_models !== undefined) set.allowed_models = modelsColumn(changes.allowed_models);
  if (changes.session_limit_tokens !== undefined) set.session_limit_tokens = changes.session_limit_tokens;
  if (changes.session_budget_nanos !== undefined) set.session_budget_nanos = changes.session_budget_nanos;
  const budgetChange = changes.budget_nanos !== undefined || changes.budget_period !== undefined;
  if (!Object.keys(set).length && !budgetChange) return findKeyById(db, id);
  const changed = await db.transaction().execute(async (trx) => {
    if (!(await lockRow(trx, "api_keys", id))) return undefined;
    const before = (await keyRow(trx, id))!;
    if (budgetChange) {
      const budget = changedBudget(before, { nanos: changes.budget_nanos, period: changes.budget_period });
      set.budget_nanos = budget.nanos;
      set.budget_period = budget.period;
    }
    await trx.updateTable("api_keys").set(set).where("id", "=", id).execute();
    const after = (await keyRow(trx, id))!;
    await bumpRevision(trx);
    if (actor)
      await writeAudit(trx, {
        actor,
        action: "update",
        resource: "keys",
        resourceId: id,
        before: keyAudit(before),
        after: keyAudit(after),
      });
    return after;
  });
  if (!changed) return undefined;
  const { deleted_at: _, ...key } = changed;
  return key;
}

async function findKeyById(db: Db, id: string): Promise<ApiKey | undefined> {
  const row = await db.selectFrom("api_keys").select(keyColumns).where("id", "=", id).executeTakeFirst();
  return row && asKey(row);
}

/** What authentication needs: the key and its account, by the key's hash. */
export async function findKeyByHash(db: Db, hash: string): Promise<{ key: ApiKey; account: Account } | null> {
  const row = await db
    .selectFrom("api_keys as k")
    .innerJoin("accounts as a", "a.id", "k.account_id")
    .select([
      "k.id as k_id",
      "k.name as k_name",
      "k.prefix as k_prefix",
      "k.limit_tokens as k_limit",
      "k.used_tokens as k_used",
      "k.budget_nanos as k_budget",
      "k.budget_period as k_budget_period",
      "k.spent_nanos as k_spent",
      "k.month_spent_nanos as k_month_spent",
      "k.spent_month as k_spent_month",
      "k.disabled as k_disabled",
      "k.created_at as k_created",
      "k.rpm_limit as k_rpm",
      "k.tpm_limit as k_tpm",
      "k.allowed_models as k_models",
      "k.session_limit_tokens as k_session_limit",
      "k.session_budget_nanos as k_session_budget",
      "a.id as a_id",
      "a.name as a_name",
      "a.plan_id as a_plan",
      "a.quota_tokens as a_quota",
      "a.used_tokens as a_used",
      "a.reserved_tokens as a_reserved",
      "a.reserved_nanos as a_reserved_nanos",
      "a.budget_nanos as a_budget",
      "a.budget_period as a_budget_period",
      "a.spent_nanos as a_spent",
      "a.month_spent_nanos as a_month_spent",
      "a.spent_month as a_spent_month",
      "a.disabled as a_disabled",
      "a.created_at as a_created",
      "a.safety as a_safety",
      "a.safety_streaming as a_safety_streaming",
    ])
    .where("k.secret_hash", "=", hash)
    // a deleted key authenticates no more: unknown, as if it had never existed
    .where("k.deleted_at", "is", null)
    .executeTakeFirst();
  if (!row) return null;
  return {
    key: {
      id: row.k_id,
      account_id: row.a_id,
      name: row.k_name,
      prefix: row.k_prefix,
      limit_tokens: row.k_limit,
      used_tokens: row.k_used,
      budget_nanos: row.k_budget,
      budget_period: row.k_budget_period,
      spent_nanos: row.k_spent,
      month_spent_nanos: row.k_month_spent,
      spent_month: row.k_spent_month,
      disabled: row.k_disabled,
      created_at: row.k_created,
      rpm_limit: row.k_rpm,
      tpm_limit: row.k_tpm,
      allowed_models: parseModels(row.k_models),
      session_limit_tokens: row.k_session_limit === null ? null : Number(row.k_session_limit),
      session_budget_nanos: row.k_session_budget === null ? null : Number(row.k_session_budget),
    },
    account: {
      id: row.a_id,
      name: row.a_name,
      plan_id: row.a_plan,
      quota_tokens: row.a_quota,
      used_tokens: row.a_used,
      reserved_tokens: row.a_reserved,
      reserved_nanos: row.a_reserved_nanos,
      budget_nanos: row.a_budget,
      budget_period: row.a_budget_period,
      spent_nanos: row.a_spent,
      month_spent_nanos: row.a_month_spent,
      spent_month: row.a_spent_month,
      disabled: row.a_disabled,
      created_at: row.a_created,
      safety: row.a_safety,
      safety_streaming: row.a_safety_streaming,
    },
  };
}

/**
 * Deletes a key: it stops authenticating on every instance (the revision bump drops their
 * caches) while its row stays, so its records and consumption keep their key. Also disabled,
 * so anything reading the row without looking at deleted_at still refuses it. False when
 * there is no such key or it was deleted already.
 */
export async function deleteKey(db: Db, id: string, actor?: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const before = actor && (await lockRow(trx, "api_keys", id)) ? await keyRow(trx, id) : undefined;
    const r = await trx
      .updateTable("api_keys")
      .set({ deleted_at: Date.now(), disabled: 1 })
      .where("id", "=", id)
      .where("deleted_at", "is", null)
      .executeTakeFirst();
    if (!Number(r.numUpdatedRows)) return false;
    await bumpRevision(trx);
    if (actor && before)
      await writeAudit(trx, {
        actor,
        action: "delete",
        resource: "keys",
        resourceId: id,
        before: keyAudit(before),
      });
    return true;
  });
}

/**
 * Every live key with its account's name (only one account's, or one key, when the filter
 * says so), by account name and then age: the administrators' list of keys and budgets.
 */
export async function listEveryKey(
  db: Db,
  filter: { accountId?: string | undefined; keyId?: string | undefined } = {},
): Promise<(ApiKey & { account_name: string })[]> {
  let q = db
    .selectFrom("api_keys as k")
    .innerJoin("accounts as a", "a.id", "k.account_id")
    .select(keyColumns.map((c) => `k.${c}` as const))
    .select("a.name as account_name")
    .where("k.deleted_at", "is", null);
  if (filter.accountId !== undefined) q = q.where("k.account_id", "=", filter.accountId);
  if (filter.keyId !== undefined) q = q.where("k.id", "=", filter.keyId);
  const rows = await q.orderBy("a.name").orderBy("k.created_at").orderBy("k.id").execute();
  return rows.map(asKey);
}
