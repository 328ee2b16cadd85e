import { parseArgs } from "node:util";
import { findAccount } from "../accounts/accounts.ts";
import { setBudget } from "../accounts/budgets.ts";
import { type ApiKey, createKey, findKey, listKeys, updateKey } from "../accounts/keys.ts";
import { formatUsd, usd } from "../prices/usd.ts";
import { budgetView, describeBudget, nextBudget, parseBudget, parsePeriod } from "./budget.ts";
import { type CliContext, negativeAmounts, parseTokens, print, UsageError } from "./context.ts";
import { describeWindows, liveView } from "./live.ts";

export function keyView(k: ApiKey) {
  return {
    id: k.id,
    account_id: k.account_id,
    name: k.name,
    prefix: k.prefix,
    limit_tokens: k.limit_tokens,
    used_tokens: k.used_tokens,
    remaining_tokens: k.limit_tokens === null ? null : Math.max(0, k.limit_tokens - k.used_tokens),
    ...budgetView(k),
    disabled: k.disabled === 1,
    /** the key's own rate limits; null: the plan's apply */
    rpm_limit: k.rpm_limit,
    tpm_limit: k.tpm_limit,
    /** the public models the key may call; null: every model of its plan */
    allowed_models: k.allowed_models === null ? null : [...k.allowed_models],
    /** what each agent session of the key may use over its life; null: no cap */
    session_limit_tokens: k.session_limit_tokens,
    session_budget_usd: k.session_budget_nanos === null ? null : usd(k.session_budget_nanos),
    created_at: new Date(k.created_at).toISOString(),
  };
}

/** "  session cap: 200000 tokens, $2 each", or nothing without caps */
function describeSessionCaps(k: ApiKey): string {
  const caps = [
    ...(k.session_limit_tokens === null ? [] : [`${k.session_limit_tokens} tokens`]),
    ...(k.session_budget_nanos === null ? [] : [`$${formatUsd(k.session_budget_nanos)}`]),
  ];
  return caps.length ? `  session-cap=${caps.join(",")}` : "";
}

/** A session cap's `--limit` (tokens) or "none"; zero caps nothing, so it is refused. */
function parseSessionLimit(value: string | undefined, flag: string): number | null | undefined {
  const n = parseTokens(value, flag, true);
  if (n === 0) throw new UsageError(`${flag} must be a positive whole number of tokens or "none"`);
  return n;
}

/** A session cap's `--budget` in dollars, or "none". */
function parseSessionBudget(value: string | undefined, flag: string): number | null | undefined {
  if (value === undefined) return undefined;
  const nanos = parseBudget(value, flag);
  if (nanos === 0) throw new UsageError(`${flag} must be above 0 (or "none")`);
  return nanos;
}

/** keyView plus what running gateways hold now and the rate limits in force. */
async function keyDetail(ctx: CliContext, k: ApiKey) {
  const db = (await ctx.store()).db;
  const account = await findAccount(db, k.account_id);
  const plan = ctx.config.plans.find((p) => p.id === account.plan_id);
  const live = await liveView(await ctx.store(), `key:${k.id}`);
  const base = keyView(k);
  return {
    ...base,
    reserved_tokens: live.reserved_tokens,
    remaining_tokens:
      k.limit_tokens === null ? null : Math.max(0, k.limit_tokens - k.used_tokens - live.reserved_tokens),
    rate_limits: {
      rpm: k.rpm_limit ?? plan?.rate_limits.key.rpm ?? null,
      tpm: k.tpm_limit ?? plan?.rate_limits.key.tpm ?? null,
      source: { rpm: k.rpm_limit === null ? "plan" : "key", tpm: k.tpm_limit === null ? "plan" : "key" },
    },
    rate_windows: live.rate_windows,
  };
}

function humanDetail(v: Awaited<ReturnType<typeof keyDetail>>, k: ApiKey): string {
  return `${human(v, k)}  reserved=${v.reserved_tokens}\n  rate: ${describeWindows(v.rate_windows, {
    rpm: v.rate_limits.rpm ?? undefined,
    tpm: v.rate_limits.tpm ?? undefined,
  })}`;
}

/** "plan" returns to the plan's default; otherwise a positive whole number. */
function parseRate(value: string | undefined, flag: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === "plan") return null;
  const n = parseTokens(value, flag);
  if (!n) throw new UsageError(`${flag} must be a positive whole number or "plan"`);
  return n;
}

function human(v: ReturnType<typeof keyView>, k: ApiKey): string {
  const limit =
    v.limit_tokens === null ? "limit=none" : `limit=${v.limit_tokens}  remaining=${v.remaining_tokens}`;
  const models = v.allowed_models === null ? "" : `  models=${v.allowed_models.join(",") || "(none)"}`;
  return `${v.id}  ${v.prefix}…  ${v.name ?? "(no name)"}  used=${v.used_tokens}  ${limit}  ${describeBudget(k)}${describeSessionCaps(k)}${models}${v.disabled ? "  DISABLED" : ""}`;
}

/**
 * `--models a,b`: the key's own list of models; "all" (null) returns to every model of its
 * plan. Where the file is the catalog, each must be a model of the account's plan there (with
 * the catalog in the store, the running gateways hold it and the admin API checks it).
 */
function parseModels(
  ctx: CliContext,
  value: string | undefined,
  planId: string,
): string[] | null | undefined {
  if (value === undefined) return undefined;
  if (value === "all") return null;
  const models = value
    .split(",")
    .map((m) => m.trim())
    .filter(Boolean);
  if (!models.length) throw new UsageError('--models needs model ids separated by commas, or "all"');
  if (ctx.config.catalog.source === "file") {
    const plan = ctx.config.plans.find((p) => p.id === planId);
    const unknown = models.find((m) => !plan?.models.includes(m));
    if (unknown !== undefined)
      throw new UsageError(
        `the plan "${planId}" has no model "${unknown}" (its models: ${plan?.models.join(", ") ?? "none"})`,
      );
  }
  return models;
}

function one(positionals: string[], usage: string): string {
  if (positionals.length !== 1) throw new UsageError(usage);
  return positionals[0]!;
}

export async function keysCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const db = (await ctx.store()).db;
  switch (sub) {
    case "create": {
      const options = {
        account: { type: "string" },
        name: { type: "string" },
        limit: { type: "string" },
        models: { type: "string" },
        "session-limit": { type: "string" },
        "session-budget": { type: "string" },
      } as const;
      const { values } = parseArgs({ args: negativeAmounts(rest, options), options, strict: true });
      if (!values.account) throw new UsageError("keys create needs --account ID|NAME");
      const account = await findAccount(db, values.account);
      const { key, secret } = await createKey(db, {
        account_id: account.id,
        name: values.name ?? null,
        limit_tokens: parseTokens(values.limit, "--limit") ?? null,
        allowed_models: parseModels(ctx, values.models, account.plan_id) ?? null,
        session_limit_tokens: parseSessionLimit(values["session-limit"], "--session-limit") ?? null,
        session_budget_nanos: parseSessionBudget(values["session-budget"], "--session-budget") ?? null,
      });
      const v = { ...keyView(key), secret };
      return print(
        ctx,
        v,
        () =>
          `created key ${human(keyView(key), key)}\n\n  ${secret}\n\nThe secret is shown this once; store it now.`,
      );
    }
    case "list": {
      const { values } = parseArgs({ args: rest, options: { account: { type: "string" } }, strict: true });
      if (!values.account) throw new UsageError("keys list needs --account ID|NAME");
      const account = await findAccount(db, values.account);
      const keys = await listKeys(db, account.id);
      const views = keys.map(keyView);
      return print(ctx, views, () =>
        views.length ? views.map((v, i) => human(v, keys[i]!)).join("\n") : "no keys",
      );
    }
    case "show": {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      const key = await findKey(db, one(positionals, "keys show needs the key's id or name"));
      const v = await keyDetail(ctx, key);
      return print(ctx, v, () => humanDetail(v, key));
    }
    case "set-rate": {
      const options = { rpm: { type: "string" }, tpm: { type: "string" } } as const;
      const { values, positionals } = parseArgs({
        args: negativeAmounts(rest, options),
        options,
        allowPositionals: true,
        strict: true,
      });
      const key = await findKey(db, one(positionals, "keys set-rate needs the key's id or name"));
      const rpm = parseRate(values.rpm, "--rpm");
      const tpm = parseRate(values.tpm, "--tpm");
      if (rpm === undefined && tpm === undefined)
        throw new UsageError("keys set-rate needs --rpm and/or --tpm");
      await updateKey(db, key.id, {
        ...(rpm === undefined ? {} : { rpm_limit: rpm }),
        ...(tpm === undefined ? {} : { tpm_limit: tpm }),
      });
      const updated = await findKey(db, key.id);
      const v = await keyDetail(ctx, updated);
      return print(ctx, v, () => `updated key ${humanDetail(v, updated)}`);
    }
    case "set-models": {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      if (positionals.length !== 2)
        throw new UsageError("keys set-models needs the key's id or name and MODEL,MODEL…|all");
      const key = await findKey(db, positionals[0]!);
      const account = await findAccount(db, key.account_id);
      const models = parseModels(ctx, positionals[1], account.plan_id) ?? null;
      await updateKey(db, key.id, { allowed_models: models });
      const updated = await findKey(db, key.id);
      const v = keyView(updated);
      return print(ctx, v, () => `updated key ${human(v, updated)}`);
    }
    case "disable":
    case "enable": {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      const key = await findKey(db, one(positionals, `keys ${sub} needs the key's id or name`));
      await updateKey(db, key.id, { disabled: sub === "disable" });
      const updated = await findKey(db, key.id);
      const v = keyView(updated);
      return print(ctx, v, () => `${sub}d key ${human(v, updated)}`);
    }
    case "set-limit": {
      const { positionals } = parseArgs({
        args: negativeAmounts(rest),
        options: {},
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length !== 2)
        throw new UsageError("keys set-limit needs the key's id or name and TOKENS|none");
      const key = await findKey(db, positionals[0]!);
      await updateKey(db, key.id, { limit_tokens: parseTokens(positionals[1], "the limit", true) ?? null });
      const updated = await findKey(db, key.id);
      const v = keyView(updated);
      return print(ctx, v, () => `updated key ${human(v, updated)}`);
    }
    case "set-session-cap": {
      const options = { limit: { type: "string" }, budget: { type: "string" } } as const;
      const { values, positionals } = parseArgs({
        args: negativeAmounts(rest, options),
        options,
        allowPositionals: true,
        strict: true,
      });
      const key = await findKey(db, one(positionals, "keys set-session-cap needs the key's id or name"));
      const limit = parseSessionLimit(values.limit, "--limit");
      const budget = parseSessionBudget(values.budget, "--budget");
      if (limit === undefined && budget === undefined)
        throw new UsageError("keys set-session-cap needs --limit TOKENS|none and/or --budget USD|none");
      await updateKey(db, key.id, {
        ...(limit === undefined ? {} : { session_limit_tokens: limit }),
        ...(budget === undefined ? {} : { session_budget_nanos: budget }),
      });
      const updated = await findKey(db, key.id);
      const v = keyView(updated);
      return print(ctx, v, () => `updated key ${human(v, updated)}`);
    }
    case "set-budget": {
      const options = { period: { type: "string" } } as const;
      const { values, positionals } = parseArgs({
        args: negativeAmounts(rest, options),
        options,
        allowPositionals: true,
        strict: true,
      });
      if (positionals.length !== 2)
        throw new UsageError("keys set-budget needs the key's id or name and USD|none");
      const nanos = parseBudget(positionals[1]!, "the budget");
      const period = parsePeriod(values.period, "--period");
      const key = await findKey(db, positionals[0]!);
      const budget = nextBudget(key, { nanos, period }, "--period");
      await setBudget(db, "api_keys", key.id, budget.nanos, budget.period);
      const updated = await findKey(db, key.id);
      const v = await keyDetail(ctx, updated);
      return print(ctx, v, () => `updated key ${humanDetail(v, updated)}`);
    }
    default:
      throw new UsageError(
        `unknown command "keys ${sub ?? ""}" (create, list, show, disable, enable, set-limit, set-rate, set-budget, set-models, set-session-cap)`,
      );
  }
}
