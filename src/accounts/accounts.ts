// Accounts in the store: who is charged, under which plan and quota. Each change bumps the
// revision (revision.ts), since every instance caches accounts with their keys.
import type { Kysely } from "kysely";
import type { Database } from "../store/schema.ts";
import { isUniqueViolation, LookupError } from "./errors.ts";
import { newId } from "./key-format.ts";
import { bumpRevision } from "./revision.ts";

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
