// `admin-tokens create | list | revoke`: the admin API's tokens (docs/admin-api.md). A token is
// printed once, when made; the store keeps its hash. Each change is in the audit log, by "cli".
import { parseArgs } from "node:util";
import {
  ADMIN_SCOPES,
  type AdminScope,
  type AdminToken,
  createAdminToken,
  listAdminTokens,
  revokeAdminToken,
} from "../accounts/admin-tokens.ts";
import { LookupError } from "../accounts/errors.ts";
import { type CliContext, print, UsageError } from "./context.ts";

const ACTOR = "cli";

export function tokenView(t: AdminToken) {
  return {
    id: t.id,
    name: t.name,
    prefix: t.prefix,
    scopes: t.scopes,
    created_by: t.created_by,
    created_at: new Date(t.created_at).toISOString(),
    last_used_at: t.last_used_at === null ? null : new Date(t.last_used_at).toISOString(),
    revoked_at: t.revoked_at === null ? null : new Date(t.revoked_at).toISOString(),
  };
}

function human(v: ReturnType<typeof tokenView>): string {
  const used = v.last_used_at === null ? "never used" : `last used ${v.last_used_at}`;
  return `${v.id}  ${v.prefix}…  ${v.name}  scopes=${v.scopes.join(",")}  ${used}${v.revoked_at === null ? "" : `  REVOKED ${v.revoked_at}`}`;
}

function scopesOf(values: string[] | undefined): AdminScope[] {
  if (!values?.length)
    throw new UsageError(`admin-tokens create needs --scope ${ADMIN_SCOPES.join("|")} (repeatable)`);
  const scopes = values.flatMap((v) => v.split(",")).map((v) => v.trim());
  const bad = scopes.find((s) => !(ADMIN_SCOPES as readonly string[]).includes(s));
  if (bad !== undefined)
    throw new UsageError(`--scope must be one of ${ADMIN_SCOPES.join(", ")} (got "${bad}")`);
  return scopes as AdminScope[];
}

export async function adminTokensCommand(ctx: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const db = (await ctx.store()).db;
  switch (sub) {
    case "create": {
      const { values } = parseArgs({
        args: rest,
        options: { name: { type: "string" }, scope: { type: "string", multiple: true } },
        strict: true,
      });
      const name = values.name?.trim();
      if (!name) throw new UsageError("admin-tokens create needs --name NAME");
      if (name.length > 100) throw new UsageError("--name must be at most 100 characters");
      const { token, secret } = await createAdminToken(db, { name, scopes: scopesOf(values.scope) }, ACTOR);
      const v = tokenView(token);
      return print(
        ctx,
        { ...v, secret },
        () =>
          `created admin token ${human(v)}\n\n  ${secret}\n\nThe token is shown this once; store it now. The admin API (/admin/v1) takes it as 'Authorization: Bearer <token>'.`,
      );
    }
    case "list": {
      parseArgs({ args: rest, options: {}, strict: true });
      const views = (await listAdminTokens(db)).map(tokenView);
      return print(ctx, views, () => (views.length ? views.map(human).join("\n") : "no admin tokens"));
    }
    case "revoke": {
      const { positionals } = parseArgs({ args: rest, options: {}, allowPositionals: true, strict: true });
      if (positionals.length !== 1) throw new UsageError("admin-tokens revoke needs the token's id");
      const token = await revokeAdminToken(db, positionals[0]!, ACTOR);
      if (!token) throw new LookupError(`no admin token with id "${positionals[0]}"`);
      const v = tokenView(token);
      return print(ctx, v, () => `revoked admin token ${human(v)}`);
    }
    default:
      throw new UsageError(`unknown command "admin-tokens ${sub ?? ""}" (create, list, revoke)`);
  }
}
