// Accounts in the store: who is charged, under which plan and quota. Each change bumps the
// revision (revision.ts), since every instance caches accounts with their keys; a change given
// an actor is written to the audit log in its own transaction.
import type { Kysely, Transaction } from "kysely";
import { lockRow } from "../audit/lock.ts";
import { writeAudit } from "../audit/log.ts";
import { changedBudget } from "../prices/budgets.ts";
import type { BudgetPeriod } from "../prices/period.ts";
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

/** An account as the audit log records it: what an operator sets, not the running counters. */
export function accountAudit(a: Account) {
  return {
    id: a.id,
    name: a.name,
    plan_id: a.plan_id,
    quota_tokens: a.quota_tokens === null ? null : Number(a.quota_tokens),
    budget_nanos: a.budget_nanos === null ? null : Number(a.budget_nanos),
    budget_period: a.budget_period,
    disabled: Number(a.disabled) === 1,
    safety: a.safety,
    safety_streaming: a.safety_streaming,
  };
}

async function accountRow(db: Db | Transaction<Database>, id: string): Promise<Account | undefined> {
  return db.selectFrom("accounts").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The only LookupError an account change throws for a name: another account has it. */
function nameTaken(name: string): LookupError {
  return new LookupError(`an account named "${name}" exists already`);
}

export async function createAccount(
  db: Db,
  input: { name: string; plan_id: string; quota_tokens?: number | null },
  actor?: string,
): Promise<Account> {
  const account = {
    id: newId("acc"),
    name: input.name,
    plan_id: input.plan_id,
    quota_tokens: input.quota_tokens ?? null,
    created_at: Date.now(),
  };
  try {
    return await db.transaction().execute(async (trx) => {
      await trx.insertInto("accounts").values(account).execute();
      // a plain object: node:sqlite's rows have no prototype
      const row = { ...(await accountRow(trx, account.id))! };
      await bumpRevision(trx);
      if (actor)
        await writeAudit(trx, {
          actor,
          action: "create",
          resource: "accounts",
          resourceId: account.id,
          after: accountAudit(row),
        });
      return row;
    });
  } catch (err) {
    // The unique index decides, so two concurrent creates of one name cannot both pass.
    if (isUniqueViolation(err)) throw nameTaken(input.name);
    throw err;
  }
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

/**
 * Changes an account; returns it as it is now, or undefined when there is no such account.
 * Throws LookupError when the new name is another account's, and BudgetChangeError when a
 * monthly period is given without an amount to apply to (worked out from the budget the
 * transaction found).
 */
export async function updateAccount(
  db: Db,
  id: string,
  changes: {
    name?: string;
    plan_id?: string;
    quota_tokens?: number | null;
    disabled?: boolean;
    /** null: inherit */
    safety?: "on" | "off" | null;
    /** null: inherit */
    safety_streaming?: "json" | "reviewed" | null;
    /** null: no budget */
    budget_nanos?: number | null;
    budget_period?: BudgetPeriod;
  },
  actor?: string,
): Promise<Account | undefined> {
  const set: Partial<
    Record<
      | "name"
      | "plan_id"
      | "quota_tokens"
      | "disabled"
      | "safety"
      | "safety_streaming"
      | "budget_nanos"
      | "budget_period",
      any
    >
  > = {};
  if (changes.name !== undefined) set.name = changes.name;
  if (changes.safety !== undefined) set.safety = changes.safety;
  if (changes.safety_streaming !== undefined) set.safety_streaming = changes.safety_streaming;
  if (changes.plan_id !== undefined) set.plan_id = changes.plan_id;
  if (changes.quota_tokens !== undefined) set.quota_tokens = changes.quota_tokens;
  if (changes.disabled !== undefined) set.disabled = changes.disabled ? 1 : 0;
  const budgetChange = changes.budget_nanos !== undefined || changes.budget_period !== undefined;
  if (!Object.keys(set).length && !budgetChange) return accountRow(db, id);
  try {
    return await db.transaction().execute(async (trx) => {
      if (!(await lockRow(trx, "accounts", id))) return undefined;
      const before = (await accountRow(trx, id))!;
      if (budgetChange) {
        const budget = changedBudget(before, { nanos: changes.budget_nanos, period: changes.budget_period });
        set.budget_nanos = budget.nanos;
        set.budget_period = budget.period;
      }
      await trx.updateTable("accounts").set(set).where("id", "=", id).execute();
      const after = (await accountRow(trx, id))!;
      await bumpRevision(trx);
      if (actor)
        await writeAudit(trx, {
          actor,
          action: "update",
          resource: "accounts",
          resourceId: id,
          before: accountAudit(before),
          after: accountAudit(after),
        });
      return after;
    });
  } catch (err) {
    if (changes.name !== undefined && isUniqueViolation(err)) throw nameTaken(changes.name);
    throw err;
  }
}
