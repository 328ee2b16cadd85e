// What the console API and the admin API share of their input: the fields of accounts, keys
// and users as both take them, and the store's refusals as both answer them.
import { z } from "zod";
import { LookupError } from "../../accounts/errors.ts";
import { PASSWORD_MAX_LENGTH } from "../../accounts/password.ts";
import { ConflictError, UserInputError } from "../../accounts/users.ts";
import { GatewayError } from "../../errors/index.ts";
import { BudgetChangeError } from "../../prices/budgets.ts";
import { BUDGET_PERIODS } from "../../prices/period.ts";
import { MAX_BUDGET_NANOS } from "../../prices/usd.ts";
import type { GatewayDeps } from "../deps.ts";

export const accountName = z.string().trim().min(1).max(100);
export const planId = z.string().min(1).max(128);
export const quota = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
/** A money budget in nanodollars; null: none. */
export const budgetNanos = z
  .number()
  .int("must be a whole number of nanodollars")
  .nonnegative()
  .max(MAX_BUDGET_NANOS, `must be at most ${MAX_BUDGET_NANOS} nanodollars ($9,000,000)`)
  .nullable();
export const budgetPeriod = z.enum(BUDGET_PERIODS);
export const keyName = z.string().trim().min(1).max(100).nullable();
export const limitTokens = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).nullable();
/** What each agent session of a key may use: tokens, and nanodollars over its life; null: no cap. */
export const sessionLimitTokens = z.number().int().positive().max(Number.MAX_SAFE_INTEGER).nullable();
export const sessionBudgetNanos = z
  .number()
  .int("must be a whole number of nanodollars")
  .positive()
  .max(MAX_BUDGET_NANOS, `must be at most ${MAX_BUDGET_NANOS} nanodollars ($9,000,000)`)
  .nullable();
/** A key's own requests or tokens per minute; null: its plan's. */
export const rateLimit = z.number().int().positive().max(1_000_000_000).nullable();
/** A key's own list of public models, within its plan's; null: every model of the plan. */
export const allowedModels = z.array(z.string().min(1).max(128)).max(256).nullable();
export const password = z.string().min(1).max(PASSWORD_MAX_LENGTH);

/** invalid_request naming `param`. */
export function badParam(param: string, problem: string): GatewayError {
  return new GatewayError("invalid_request", { message: `Invalid parameter '${param}': ${problem}.`, param });
}

/** invalid_request for a plan that is not configured. */
export function checkPlan(deps: GatewayDeps, plan: string | undefined): void {
  if (plan !== undefined && !deps.registry.plans.get(plan))
    throw badParam("plan_id", `no plan "${plan}" (plans: ${deps.config.plans.map((p) => p.id).join(", ")})`);
}

/**
 * invalid_request naming the first model of a key's list that its account's plan does not
 * offer: a misspelt id would otherwise leave the key unable to call what was meant.
 */
export function checkModels(
  deps: GatewayDeps,
  planId: string,
  models: readonly string[] | null | undefined,
): void {
  if (!models) return;
  const i = models.findIndex((m) => !deps.registry.plans.includes(planId, m));
  if (i >= 0) throw badParam(`allowed_models[${i}]`, `the plan "${planId}" has no model "${models[i]}"`);
}

/**
 * The store's refusals of an account, key or user change as the APIs answer them: a budget
 * period without an amount, a taken name or e-mail, a bad user field.
 */
export function changeRefused(err: unknown): never {
  if (err instanceof BudgetChangeError) throw badParam("budget_period", err.message);
  if (err instanceof UserInputError) throw badParam(err.field, err.message);
  if (err instanceof ConflictError) throw new GatewayError("conflict", { message: err.message });
  // the only LookupError an account change throws: the name is taken
  if (err instanceof LookupError) throw new GatewayError("conflict", { message: err.message, param: "name" });
  throw err;
}
