// Loads the configuration: the YAML file named by GATEWAY_CONFIG (or the embedded defaults),
// then the environment overrides, validated once and frozen.
import { readFileSync } from "node:fs";
import { parseDocument } from "yaml";
import type { z } from "zod";
import { configSchema } from "./cross-check.ts";
import type { Config, ConfigInput } from "./schema.ts";

/** What `npm start` serves with no config file: the offline demo models on a default plan. */
export const EMBEDDED_DEFAULTS: ConfigInput = {
  providers: [{ id: "demo", type: "demo" }],
  models: [
    { id: "demo", provider: "demo", upstream_model: "demo-echo", owned_by: "chat-gateway" },
    {
      id: "demo-embedding",
      kind: "embedding",
      provider: "demo",
      upstream_model: "demo-embedding",
      owned_by: "chat-gateway",
    },
  ],
  plans: [
    {
      id: "default",
      quota_tokens: 1_000_000,
      models: ["demo", "demo-embedding"],
      rate_limits: { key: { rpm: 600, tpm: 200_000 }, account: { rpm: 1_200, tpm: 400_000 } },
    },
  ],
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

/** Which config fields an environment variable set, so their errors name the variable. */
type EnvFields = Map<string, string>;

function formatIssues(source: string, error: z.ZodError, fromEnv: EnvFields): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length
        ? issue.path
            .map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${String(p)}` : String(p)))
            .join("")
        : "(top level)";
      const variable = fromEnv.get(path);
      return variable
        ? `environment: ${variable} (${path}): ${issue.message}`
        : `${source}: ${path}: ${issue.message}`;
    })
    .join("\n");
}

function readYaml(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new ConfigError(`${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? err})`);
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    const where = e.linePos?.[0]
      ? `line ${e.linePos[0].line}, column ${e.linePos[0].col}`
      : "(unknown position)";
    throw new ConfigError(`${file}: ${where}: ${e.message.split("\n")[0]}`);
  }
  const value = doc.toJS();
  return value ?? {};
}

/**
 * The environment variables that set a configuration field, over the file's value; `whole`:
 * read as a whole number. docs/configuration.md lists them beside their fields.
 */
export const ENV_FIELDS = [
  { variable: "PORT", path: ["server", "port"], whole: true },
  { variable: "HOST", path: ["server", "host"] },
  { variable: "GATEWAY_DATA_DIR", path: ["store", "data_dir"] },
  { variable: "DATABASE_URL", path: ["store", "database_url"] },
  { variable: "REDIS_URL", path: ["store", "redis_url"] },
  { variable: "LOG_LEVEL", path: ["log_level"] },
] as const;

function envInt(env: Env, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`environment: ${name}: must be a whole number, got "${raw}"`);
  return Number(raw);
}

/** Applies the documented environment variables over the file's values. */
function applyEnv(input: Record<string, any>, env: Env, fromEnv: EnvFields): Record<string, any> {
  const out: Record<string, any> = { ...input };
  for (const { variable, path, ...how } of ENV_FIELDS) {
    const value = "whole" in how ? envInt(env, variable) : env[variable] || undefined;
    if (value === undefined) continue;
    let target = out;
    for (const section of path.slice(0, -1)) {
      target[section] = { ...(target[section] ?? {}) };
      target = target[section];
    }
    target[path.at(-1)!] = value;
    fromEnv.set(path.join("."), variable);
  }
  return out;
}

/**
 * Reads, validates and freezes the configuration. Throws ConfigError whose message names the
 * source (file or "environment"), the field path and the problem, one line per problem.
 */
export function loadConfig(env: Env = process.env, file: string | undefined = env.GATEWAY_CONFIG): Config {
  const source = file ?? "embedded defaults";
  const raw = file ? readYaml(file) : EMBEDDED_DEFAULTS;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new ConfigError(`${source}: (top level): must be a mapping of fields`);
  if (file) refuseKeysInFile(source, raw as Record<string, unknown>);
  const fromEnv: EnvFields = new Map();
  const result = configSchema.safeParse(applyEnv(raw as Record<string, any>, env, fromEnv));
  if (!result.success) throw new ConfigError(formatIssues(source, result.error, fromEnv));
  return deepFreeze(result.data);
}

/**
 * A file is read by more than the gateway (backups, repositories, support tickets): upstream
 * keys come through the admin API or the console, stored encrypted, and the file names the
 * variables that hold them. One schema serves both, so the file's own rule is here.
 */
function refuseKeysInFile(source: string, raw: Record<string, unknown>): void {
  if (!Array.isArray(raw.providers)) return;
  const lines = raw.providers.flatMap((p: unknown, i) =>
    p !== null && typeof p === "object" && "api_keys" in p
      ? [
          `${source}: providers[${i}].api_keys: upstream keys never go in the file: name the environment variables that hold them in api_keys_env (api_keys is for the admin API and the console)`,
        ]
      : [],
  );
  if (lines.length) throw new ConfigError(lines.join("\n"));
}

export function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
