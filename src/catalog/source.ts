// Where a gateway's catalog comes from at start and on each reload: the file's own, or the
// store's in place of the file's (seeded from the file on a store that has none).
import type { Kysely } from "kysely";
import { ConfigError } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import type { Database } from "../store/schema.ts";
import { catalogOf, composeConfig, formatPath } from "./compose.ts";
import { CatalogSecretsError, readCatalog, seedCatalog } from "./entries.ts";
import { MIN_SECRET_KEY_LENGTH, SECRET_KEY_ENV, SecretBox, SecretBoxError } from "./secret-box.ts";

/** The environment's secret box; a key set but too short stops the start. */
export function secretBoxOf(env: Record<string, string | undefined>): SecretBox | undefined {
  try {
    return SecretBox.fromEnv(env);
  } catch (err) {
    if (err instanceof SecretBoxError)
      throw new ConfigError(
        `environment: ${SECRET_KEY_ENV}: must be at least ${MIN_SECRET_KEY_LENGTH} characters`,
      );
    throw err;
  }
}

function storeProblem(err: unknown): never {
  if (err instanceof CatalogSecretsError || err instanceof SecretBoxError)
    throw new ConfigError(`the store's catalog: ${err.message}`);
  throw err;
}

/**
 * `file` with the store's catalog in place of its own. Throws ConfigError naming the field
 * when the stored catalog is not valid with these settings (a reload keeps the running one).
 */
export async function withStoredCatalog(
  file: Config,
  db: Kysely<Database>,
  box: SecretBox | undefined,
): Promise<Config> {
  const data = await readCatalog(db, box).catch(storeProblem);
  const composed = composeConfig(file, data);
  if (composed.ok) return composed.config;
  throw new ConfigError(
    composed.issues.map((i) => `the store's catalog: ${formatPath(i.path)}: ${i.message}`).join("\n"),
  );
}

/** Seeds the store's catalog from the file's unless the store has one; whether this start did. */
export async function seedFromFile(
  file: Config,
  db: Kysely<Database>,
  box: SecretBox | undefined,
): Promise<boolean> {
  return seedCatalog(db, catalogOf(file), box).catch(storeProblem);
}
