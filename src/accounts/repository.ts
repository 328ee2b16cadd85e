// Accounts and keys in the store. Every change that a running gateway caches bumps the
// revision row in the same transaction, so every instance drops its caches within a poll.
import type { Kysely, Transaction } from "kysely";
import type { BudgetPeriod } from "../prices/period.ts";
import type { Database } from "../store/schema.ts";
import { generateKey, newId } from "./key-format.ts";

type Db = Kysely<Database>;

export interface Account {
  id: string;
  name: string;
  plan_id: string;
  quota_tokens: number | null;
  used_tokens: number;
  /** tokens held by calls in flight, kept in the row only by the shared ledger (PostgreSQL) */
  reserved_tokens: number;
  /** nanodollars held by calls in flight, kept in the row only by the shared ledgers */
  reserved_nanos: number;
  /** money budget in nanodollars (null: none), its period, and what was spent (src/prices/period.ts) */
  budget_nanos: number | null;
  budget_period: string;
  spent_nanos: number;
  month_spent_nanos: number;
  spent_month: string;
  disabled: number;
  created_at: number;
  /** content safety: "on" | "off"; null inherits the plan's, then the global, setting */
  safety: string | null;
  /** streaming under safety: "json" | "reviewed"; null inherits */
  safety_streaming: string | null;
}

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

export class LookupError extends Error {
  override name = "LookupError";
}

/** PostgreSQL's 23505 or SQLite's UNIQUE constraint failure. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  return (
    e?.code === "23505" || (typeof e?.message === "string" && e.message.includes("UNIQUE constraint failed"))
  );
}

async function bumpRevision(trx: Transaction<Database>): Promise<void> {
  await trx
    .updateTable("revision")
    .set((eb) => ({ value: eb("value", "+", 1) }))
    .where("id", "=", 1)
    .execute();
}

export async function readRevision(db: Db): Promise<number> {
  const row = await db.selectFrom("revision").select("value").where("id", "=", 1).executeTakeFirst();
  return row ? Number(row.value) : 0;
}

export async function countAccounts(db: Db): Promise<number> {
  const row = await db
    .selectFrom("accounts")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function createAccount(
  db: Db,
  input: { name: string; plan_id: string; quota_tokens?: number | null },
): Promise<Account> {
  const account = {
    id: newId("acc"),
    name: input.name,
    plan_id: input.plan_id,
    quota_tokens: input.quota_tokens ?? null,
    created_at: Date.now(),
  };
  try {
    await db.transaction().execute(async (trx) => {
      await trx.insertInto("accounts").values(account).execute();
      await bumpRevision(trx);
    });
  } catch (err) {
    // The unique index decides, so two concurrent creates of one name cannot both pass.
    if (isUniqueViolation(err)) throw new LookupError(`an account named "${input.name}" exists already`);
    throw err;
  }
  return {
    ...account,
    used_tokens: 0,
    reserved_tokens: 0,
    reserved_nanos: 0,
    budget_nanos: null,
    budget_period: "none",
    spent_nanos: 0,
    month_spent_nanos: 0,
    spent_month: "",
    disabled: 0,
    safety: null,
    safety_streaming: null,
  };
}

export async function listAccounts(db: Db): Promise<Account[]> {
  return db.selectFrom("accounts").selectAll().orderBy("created_at").orderBy("id").execute();
}

/** An account by id or by name. */
export async function findAccount(db: Db, ref: string): Promise<Account> {
  const row = await db
    .selectFrom("accounts")
    .selectAll()
    .where((eb) => eb.or([eb("id", "=", ref), eb("name", "=", ref)]))
    .executeTakeFirst();
  if (!row) throw new LookupError(`no account with id or name "${ref}"`);
  return row;
}

export async function updateAccount(
  db: Db,
  id: string,
  changes: {
    plan_id?: string;
    quota_tokens?: number | null;
    disabled?: boolean;
    /** null: inherit */
    safety?: "on" | "off" | null;
    /** null: inherit */
    safety_streaming?: "json" | "reviewed" | null;
  },
): Promise<void> {
  const set: Partial<Record<"plan_id" | "quota_tokens" | "disabled" | "safety" | "safety_streaming", any>> =
    {};
  if (changes.safety !== undefined) set.safety = changes.safety;
  if (changes.safety_streaming !== undefined) set.safety_streaming = changes.safety_streaming;
  if (changes.plan_id !== undefined) set.plan_id = changes.plan_id;
  if (changes.quota_tokens !== undefined) set.quota_tokens = changes.quota_tokens;
  if (changes.disabled !== undefined) set.disabled = changes.disabled ? 1 : 0;
  if (!Object.keys(set).length) return;
  await db.transaction().execute(async (trx) => {
    await trx.updateTable("accounts").set(set).where("id", "=", id).execute();
    await bumpRevision(trx);
  });
}

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
 * Sets an account's or a key's money budget (nanodollars; null: none) and its period. What
 * was spent stays: a budget set mid-month counts what the month already spent.
 */
export async function setBudget(
  db: Db,
  table: "accounts" | "api_keys",
  id: string,
  nanos: number | null,
  period: BudgetPeriod,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const r = await trx
      .updateTable(table)
      .set({ budget_nanos: nanos, budget_period: period })
      .where("id", "=", id)
      .executeTakeFirst();
    if (!r.numUpdatedRows) return false;
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
