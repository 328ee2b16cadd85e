// The command line behind src/main.ts: `chat-gateway` (bin/chat-gateway.js) or
// `node src/main.ts` with `[serve]`, `migrate`, `config check`, `accounts …`, `keys …`,
// `users …`, `admin-tokens …`, `deployments`, `--version`.
// Every command takes --json and then prints one JSON document, and nothing else, on stdout:
// with --json, serve's logs go to stderr.
import { existsSync, readFileSync } from "node:fs";
import { flushCompileCache, getCompileCacheDir } from "node:module";
import { join } from "node:path";
import { LookupError } from "../accounts/errors.ts";
import { ConfigError, loadConfig } from "../config/load.ts";
import { releaseMemoryWhenIdle, releaseStartUpMemory } from "../lib/idle-memory.ts";
import { letYoungGenerationGrow } from "../lib/young-generation.ts";
import { migrate, openStore, type Store, StoreNewerError } from "../store/db.ts";
import { accountsCommand } from "./accounts.ts";
import { adminTokensCommand } from "./admin-tokens.ts";
import { type CliContext, UsageError } from "./context.ts";
import { deploymentsCommand } from "./deployments.ts";
import { firstStartText, writeSecretsFile } from "./first-start.ts";
import { keysCommand } from "./keys.ts";
import { usersCommand } from "./users.ts";

/** This module runs from the build in dist/, not from the TypeScript in src/. */
const RUNS_COMPILED = import.meta.url.endsWith(".js");

const USAGE = `usage: chat-gateway <command> [--json]      (in a clone: node src/main.ts <command> [--json])

  serve                                   run the gateway (the default)
  migrate                                 apply store migrations
  compile                                 fill Node's compile cache with what serve loads, for a
                                          code folder the gateway's user cannot write (a clone that
                                          runs its TypeScript; the compiled build needs none)
  config check                            validate the configuration and print a summary
  accounts create --name N [--plan P] [--quota TOKENS]
  accounts list
  accounts show ID|NAME
  accounts set ID|NAME [--plan P] [--quota TOKENS|none] [--disabled true|false]
                      [--budget-usd USD|none] [--budget-period month|none]
                      [--safety on|off|inherit] [--safety-streaming json|reviewed|inherit]
  keys create --account ID|NAME [--name LABEL] [--limit TOKENS] [--models MODEL,MODEL…]
              [--session-limit TOKENS] [--session-budget USD]
  keys list --account ID|NAME
  keys show ID|NAME
  keys disable ID|NAME
  keys enable ID|NAME
  keys set-limit ID|NAME TOKENS|none
  keys set-rate ID|NAME [--rpm N|plan] [--tpm N|plan]
  keys set-budget ID|NAME USD|none [--period month|none]
  keys set-models ID|NAME MODEL,MODEL…|all
  keys set-session-cap ID|NAME [--limit TOKENS|none] [--budget USD|none]
                                          what each agent session of the key may use
  users create --account ID|NAME --email E [--role member|owner|admin] [--password P]
  users set-password EMAIL [--password P]
  users list [--account ID|NAME]
                                          without --password: asked on a terminal, else one line of stdin
  admin-tokens create --name N --scope read|keys|catalog|full [--scope …]
                                          a token for the admin API (/admin/v1), printed this once
  admin-tokens list
  admin-tokens revoke ID
  deployments                             each deployment's health as the running gateways see it
  --version                               the gateway's version

Environment: GATEWAY_CONFIG (YAML file), PORT, HOST, GATEWAY_DATA_DIR, DATABASE_URL, REDIS_URL, LOG_LEVEL,
GATEWAY_FIRST_ADMIN_EMAIL (the console admin a first start creates; admin@localhost by default).`;

/** package.json sits two folders up from this file, run as source (src/) or compiled (dist/). */
export function version(): string {
  return (
    JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
  ).version;
}

/** What serve loads besides the CLI: loaded then, so CLI commands do not pay for Fastify, the tokenizer and the providers. */
const serving = () =>
  Promise.all([
    import("../server.ts"),
    import("../observability/logger.ts"),
    import("../http/console-static.ts"),
  ]);

async function serve(ctx: CliContext): Promise<void> {
  const [{ startGateway }, { createLogger }, { CONSOLE_DIST }] = await serving();
  // stdout then carries the one JSON document a --json command prints, so a reader can parse it
  const logger = createLogger(ctx.config.log_level, ctx.json ? process.stderr : undefined);
  const source = process.env.GATEWAY_CONFIG ?? "embedded defaults";
  // SIGHUP's default is to end the process: from now on it reloads (docs/health.md).
  let reload: (() => void) | undefined;
  process.on("SIGHUP", () => {
    if (reload) reload();
    else
      logger.warn(
        { signal: "SIGHUP" },
        "the gateway is starting or stopping: the configuration is not reloaded",
      );
  });
  const gateway = await startGateway(ctx.config, {
    logger,
    loadConfig: () => loadConfig(),
    configSource: source,
    // what start-up left goes back before the port opens (src/lib/idle-memory.ts)
    beforeListen: () => releaseStartUpMemory(logger),
  });
  // the first call lets the young generation grow (src/lib/young-generation.ts)
  gateway.app.server.once("request", letYoungGenerationGrow);
  // Node writes its compile cache at exit; what start-up compiled is kept now, should this
  // process be killed (bin/chat-gateway.js)
  flushCompileCache();
  // what a burst of calls grew the process to goes back once it idles (src/lib/idle-memory.ts)
  const idleMemory = await releaseMemoryWhenIdle(gateway.deps.logger);
  // one line says how it went (src/relay/settings.ts)
  reload = () =>
    void gateway.reload().catch((err) => logger.error({ err }, "the configuration reload failed"));
  // before anything below says the gateway is up: a SIGTERM as soon as a supervisor reads that
  // must find the graceful shutdown in place, not Node's default exit
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    reload = undefined;
    idleMemory.stop();
    gateway.deps.logger.info({ signal }, "shutting down");
    gateway.close().then(
      () => process.exit(0),
      (err) => {
        gateway.deps.logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // a clone builds it at `npm install`, a package carries it built; starting never builds it
  if (!existsSync(join(CONSOLE_DIST, "index.html")))
    logger.warn(
      "the web console is not built: /console answers 503 until it is (`npm run build:console` in the clone; no restart needed)",
    );
  const base = `${gateway.url}/v1`;
  const model = ctx.config.plans.find((p) => p.id === ctx.config.default_plan)?.models[0] ?? "demo";
  const secrets = gateway.firstKey && firstStartText(gateway, gateway.firstKey, model);
  const toTerminal = process.stdout.isTTY === true;
  const file = secrets && !toTerminal ? writeSecretsFile(ctx.config.store.data_dir, secrets) : null;
  if (ctx.json) {
    const { firstKey, firstAdmin } = gateway;
    ctx.out(
      JSON.stringify({
        url: base,
        console_url: `${gateway.url}/console`,
        // without a terminal the secrets are only in secrets_file
        first_key: firstKey ? (toTerminal ? firstKey : { account: firstKey.account }) : null,
        first_admin: firstAdmin ? (toTerminal ? firstAdmin : { email: firstAdmin.email }) : null,
        secrets_file: file,
      }),
    );
  } else if (secrets && toTerminal) ctx.out(secrets);
  if (file)
    gateway.deps.logger.warn(
      { file },
      "first start: the API key and the console admin's password are in this file, readable only by its owner; store them elsewhere and delete it",
    );
}

export async function runCli(argv: string[], out: (text: string) => void = console.log): Promise<number> {
  const json = argv.includes("--json");
  const args = argv.filter((a) => a !== "--json");
  if (args.includes("--help") || args.includes("-h") || args[0] === "help") {
    out(json ? JSON.stringify({ usage: USAGE }) : USAGE);
    return 0;
  }
  // before the configuration is read: a broken configuration must not hide which version it is
  if (args.includes("--version")) {
    out(json ? JSON.stringify({ version: version() }) : version());
    return 0;
  }
  let store: Store | undefined;
  const fail = (message: string, code: number) => {
    if (json) out(JSON.stringify({ error: { message } }));
    else console.error(`error: ${message}`);
    return code;
  };
  try {
    const config = loadConfig();
    const ctx: CliContext = {
      config,
      json,
      out,
      store: async () => {
        if (!store) {
          store = openStore(config.store);
          await migrate(store);
        }
        return store;
      },
    };
    const [command = "serve", ...rest] = args;
    switch (command) {
      case "serve":
        await serve(ctx);
        return -1; // keeps running
      case "compile": {
        // bin/chat-gateway.js turned the cache on (or NODE_COMPILE_CACHE names it)
        const cache = getCompileCacheDir();
        // the compiled JavaScript (dist/) runs without it (bin/chat-gateway.js, decision 0042)
        if (!cache && RUNS_COMPILED) {
          out(
            json ? JSON.stringify({ cache: null }) : "nothing to compile: this is the compiled build (dist/)",
          );
          return 0;
        }
        if (!cache)
          return fail(
            "Node's compile cache is off (NODE_DISABLE_COMPILE_CACHE, or its folder cannot be made)",
            1,
          );
        await serving();
        flushCompileCache();
        out(json ? JSON.stringify({ cache }) : `compiled what serve loads into ${cache}`);
        return 0;
      }
      case "migrate": {
        const s = openStore(config.store);
        store = s;
        const applied = await migrate(s);
        out(
          json
            ? JSON.stringify({ applied, store: s.location })
            : `migrations applied: ${applied.length ? applied.join(", ") : "none pending"} (${s.location})`,
        );
        return 0;
      }
      case "config":
        if (rest[0] !== "check") throw new UsageError('unknown command "config" (use: config check)');
        out(
          json
            ? JSON.stringify({
                ok: true,
                source: process.env.GATEWAY_CONFIG ?? "embedded defaults",
                providers: config.providers.map((p) => ({ id: p.id, type: p.type })),
                models: config.models.map((m) => m.id),
                plans: config.plans.map((p) => ({
                  id: p.id,
                  quota_tokens: p.quota_tokens,
                  models: p.models,
                })),
                default_plan: config.default_plan,
              })
            : `configuration OK (${process.env.GATEWAY_CONFIG ?? "embedded defaults"}): ${config.providers.length} providers, ${config.models.length} models, ${config.plans.length} plans`,
        );
        return 0;
      case "accounts":
        await accountsCommand(ctx, rest);
        return 0;
      case "keys":
        await keysCommand(ctx, rest);
        return 0;
      case "users":
        await usersCommand(ctx, rest);
        return 0;
      case "admin-tokens":
        await adminTokensCommand(ctx, rest);
        return 0;
      case "deployments":
        await deploymentsCommand(ctx, rest);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
    }
  } catch (err) {
    if (err instanceof ConfigError) return fail(`invalid configuration\n${err.message}`, 2);
    if (err instanceof UsageError) return fail(err.message, 2);
    if (err instanceof LookupError || err instanceof StoreNewerError) return fail(err.message, 1);
    if (err instanceof TypeError && (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS"))
      return fail(err.message, 2);
    throw err;
  } finally {
    if (store) await store.close();
  }
}
