import { parseArgs } from "node:util";
import {
  type Account,
  createAccount,
  findAccount,
  listAccounts,
  updateAccount,
} from "../accounts/accounts.ts";
import { setBudget } from "../accounts/budgets.ts";
import { listKeys } from "../accounts/keys.ts";
import type { Config } from "../config/schema.ts";
import { safetySettings } from "../safety/policy.ts";
import { budgetView, describeBudget, nextBudget, parseBudget, parsePeriod } from "./budget.ts";
import { type CliContext, negativeAmounts, parseBool, parseTokens, print, UsageError } from "./context.ts";
import { describeWindows, liveView } from "./live.ts";

export function accountView(config: Config, a: Account) {
  const plan = config.plans.find((p) => p.id === a.plan_id);
  const quota = a.quota_tokens ?? plan?.quota_tokens ?? 0;
  return {
    id: a.id,
    name: a.name,
    plan: a.plan_id,
    quota_tokens: quota,
    quota_source: a.quota_tokens === null ? "plan" : "account",
    used_tokens: a.used_tokens,
    remaining_tokens: Math.max(0, quota - a.used_tokens),
    ...budgetView(a),
    disabled: a.disabled === 1,
    created_at: new Date(a.created_at).toISOString(),
    safety: {
      ...safetySettings(config.safety, plan, a),
      /** what the account itself says; "inherit" follows the plan, then the global setting */
      setting: a.safety ?? "inherit",
      streaming_setting: a.safety_streaming ?? "inherit",
    },
  };
}

const SAFETY_VALUES = { on: "on", off: "off", inherit: null } as const;
const STREAMING_VALUES = { json: "json", reviewed: "reviewed", inherit: null } as const;

function choice<T extends Record<string, unknown>>(
  value: string | undefined,
  flag: string,
  values: T,
): T[keyof T] | undefined {
  if (value === undefined) return undefined;
  if (!Object.hasOwn(values, value))
    throw new UsageError(`${flag} must be one of ${Object.keys(values).join(", ")}`);
  return values[value as keyof T];
}

function checkPlan(config: Config, plan: string | undefined): void {
  if (plan !== undefined && !config.plans.some((p) => p.id === plan))
    throw new UsageError(
      `no plan "${plan}" in the configuration (plans: ${config.plans.map((p) => p.id).join(", ")})`,
    );
}

function human(v: ReturnType<typeof accountView>, a: Account): string {
  const safety = v.safety.enabled ? `on (${v.safety.streaming})` : "off";
  const source = v.safety.setting === "inherit" ? "" : " by account";
  return `${v.id}  ${v.name}  plan=${v.plan}  quota=${v.quota_tokens} (${v.quota_source})  used=${v.used_tokens}  remaining=${v.remaining_tokens}  ${describeBudget(a)}  safety=${safety}${source}${v.disabled ? "  DISABLED" : ""}`;
}

export async function accountsCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const db = (await ctx.store()).db;
  switch (sub) {
    case "create": {
      const options = {
        name: { type: "string" },
        plan: { type: "string" },
        quota: { type: "string" },
      } as const;
      const { values } = parseArgs({ args: negativeAmounts(rest, options), options, strict: true });
      if (!values.name) throw new UsageError("accounts create needs --name NAME");
      checkPlan(ctx.config, values.plan);
      const account = await createAccount(db, {
        name: values.name,
        plan_id: values.plan ?? ctx.config.default_plan,
        quota_tokens: parseTokens(values.quota, "--quota") ?? null,
      });
      const v = accountView(ctx.config, account);
      return print(ctx, v, () => `created account ${human(v, account)}`);
    }
    case "list": {
      parseArgs({ args: rest, options: {}, strict: true });
      const accounts = await listAccounts(db);
      const views = accounts.map((a) => accountView(ctx.config, a));
      return print(ctx, views, () =>
        views.length ? views.map((v, i) => human(v, accounts[i]!)).join("\n") : "no accounts",
      );
    }
    case "show": {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      if (positionals.length !== 1) throw new UsageError("accounts show needs the account's id or name");
      const account = await findAccount(db, positionals[0]!);
      const keys = await listKeys(db, account.id);
      const base = accountView(ctx.config, account);
      const live = await liveView(await ctx.store(), `account:${account.id}`);
      const limits = ctx.config.plans.find((p) => p.id === account.plan_id)?.rate_limits.account;
      const v = {
        ...base,
        reserved_tokens: live.reserved_tokens,
        remaining_tokens: Math.max(0, base.remaining_tokens - live.reserved_tokens),
        keys: keys.length,
        rate_limits: { rpm: limits?.rpm ?? null, tpm: limits?.tpm ?? null },
        rate_windows: live.rate_windows,
      };
      return print(
        ctx,
        v,
        () =>
          `${human(v, account)}  reserved=${v.reserved_tokens}  keys=${v.keys}\n  rate: ${describeWindows(v.rate_windows, limits ?? {})}`,
      );
    }
    case "set": {
      const options = {
        plan: { type: "string" },
        quota: { type: "string" },
        disabled: { type: "string" },
        safety: { type: "string" },
        "safety-streaming": { type: "string" },
        "budget-usd": { type: "string" },
        "budget-period": { type: "string" },
      } as const;
      const { values, positionals } = parseArgs({
        args: negativeAmounts(rest, options),
        options,
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length !== 1) throw new UsageError("accounts set needs the account's id or name");
      checkPlan(ctx.config, values.plan);
      const account = await findAccount(db, positionals[0]!);
      const changes: Parameters<typeof updateAccount>[2] = {};
      if (values.plan !== undefined) changes.plan_id = values.plan;
      const quota = parseTokens(values.quota, "--quota", true);
      if (quota !== undefined) changes.quota_tokens = quota;
      const disabled = parseBool(values.disabled, "--disabled");
      if (disabled !== undefined) changes.disabled = disabled;
      const safety = choice(values.safety, "--safety", SAFETY_VALUES);
      if (safety !== undefined) changes.safety = safety;
      const streaming = choice(values["safety-streaming"], "--safety-streaming", STREAMING_VALUES);
      if (streaming !== undefined) changes.safety_streaming = streaming;
      const budgetNanos =
        values["budget-usd"] === undefined ? undefined : parseBudget(values["budget-usd"], "--budget-usd");
      const period = parsePeriod(values["budget-period"], "--budget-period");
      const budget =
        budgetNanos === undefined && period === undefined
          ? undefined
          : nextBudget(account, { nanos: budgetNanos, period }, "--budget-period");
      if (!Object.keys(changes).length && !budget)
        throw new UsageError(
          "accounts set needs --plan, --quota, --disabled, --safety, --safety-streaming, --budget-usd or --budget-period",
        );
      if (safety === "on" && !ctx.config.safety.reviewers.length)
        throw new UsageError(
          "--safety on needs at least one reviewer under safety.reviewers in the configuration; without one every call would fail closed",
        );
      if (Object.keys(changes).length) await updateAccount(db, account.id, changes);
      if (budget) await setBudget(db, "accounts", account.id, budget.nanos, budget.period);
      const updated = await findAccount(db, account.id);
      const v = accountView(ctx.config, updated);
      return print(ctx, v, () => `updated account ${human(v, updated)}`);
    }
    default:
      throw new UsageError(`unknown command "accounts ${sub ?? ""}" (create, list, show, set)`);
  }
}
