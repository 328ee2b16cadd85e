// API keys in the store: created with their secret shown once and only its hash kept, found by
// that hash to authenticate, limited and disabled. Each change bumps the revision
// (revision.ts), since every instance caches keys by their secret.
import type { Kysely } from "kysely";
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
] as const;

export async function createKey(
  db: Db,
  input: { account_id: string; name?: string | null; limit_tokens?: number | null },
): Promise<{ key: ApiKey; secret: string }> {
  const { secret, hash, prefix } = generateKey();
  const key = {
    id: newId("key"),
    account_id: input.account_id,
    name: input.name ?? null,
    prefix,
    limit_tokens: input.limit_tokens ?? null,
    created_at: Date.now(),
  };
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("api_keys")
      .values({ ...key, secret_hash: hash })
      .execute();
    await bumpRevision(trx);
  });
  const fresh = {
    used_tokens: 0,
    budget_nanos: null,
    budget_period: "none",
    spent_nanos: 0,
    month_spent_nanos: 0,
    spent_month: "",
    disabled: 0,
    rpm_limit: null,
    tpm_limit: null,
  };
  return { key: { ...key, ...fresh }, secret };
}

/** The account's keys, deleted ones left out. */
export async function listKeys(db: Db, accountId: string): Promise<ApiKey[]> {
  return db
    .selectFrom("api_keys")
    .select(keyColumns)
    .where("account_id", "=", accountId)
    .where("deleted_at", "is", null)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
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
  if (byId) return byId;
  if (rows.length > 1) throw new LookupError(`several keys are named "${ref}"; name the key by its id`);
  if (!rows[0]) throw new LookupError(`no key with id or name "${ref}"`);
  return rows[0];
}

export async function updateKey(
  db: Db,
  id: string,
  changes: {
    name?: string | null;
    disabled?: boolean;
    limit_tokens?: number | null;
    rpm_limit?: number | null;
    tpm_limit?: number | null;
  },
): Promise<void> {
  const set: Partial<Record<"name" | "disabled" | "limit_tokens" | "rpm_limit" | "tpm_limit", any>> = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.disabled !== undefined) set.disabled = changes.disabled ? 1 : 0;
  if (changes.limit_tokens !== undefined) set.limit_tokens = changes.limit_tokens;
  if (changes.rpm_limit !== undefined) set.rpm_limit = changes.rpm_limit;
  if (changes.tpm_limit !== undefined) set.tpm_limit = changes.tpm_limit;
  if (!Object.keys(set).length) return;
  await db.transaction().execute(async (trx) => {
    await trx.updateTable("api_keys").set(set).where("id", "=", id).execute();
    await bumpRevision(trx);
  });
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
export async function deleteKey(db: Db, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable("api_keys")
      .set({ deleted_at: Date.now(), disabled: 1 })
      .where("id", "=", id)
      .where("deleted_at", "is", null)
      .executeTakeFirst();
    if (!Number(r.numUpdatedRows)) return false;
    await bumpRevision(trx);
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
  return q.orderBy("a.name").orderBy("k.created_at").orderBy("k.id").execute();
}
