// Opens the store: SQLite (a file in the data folder) by default, PostgreSQL when a
// postgres:// URL is configured. One Kysely query code serves both.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Kysely, PostgresDialect, SqliteDialect, sql } from "kysely";
import { DEFAULT_MIGRATION_TABLE, type Migration, Migrator } from "kysely/migration";
import { PG_APPLICATION, postgresDriver, postgresPool } from "./drivers.ts";
import * as initial from "./migrations/001-initial.ts";
import * as rateLimits from "./migrations/002-rate-limits.ts";
import * as safety from "./migrations/003-safety.ts";
import * as consoleTables from "./migrations/004-console.ts";
import * as consoleIndexes from "./migrations/005-console-indexes.ts";
import * as unchargedTokens from "./migrations/006-uncharged-tokens.ts";
import * as cacheTokens from "./migrations/007-cache-tokens.ts";
import * as attempts from "./migrations/008-attempts.ts";
import * as overruns from "./migrations/009-overruns.ts";
import * as sharedLedger from "./migrations/010-shared-ledger.ts";
import * as prices from "./migrations/011-prices.ts";
import * as clientApi from "./migrations/012-client-api.ts";
import * as storedResponses from "./migrations/013-stored-responses.ts";
import * as sharedMoney from "./migrations/015-shared-money.ts";
import * as ledgerCharges from "./migrations/016-ledger-charges.ts";
import * as storedResponseOwners from "./migrations/017-stored-response-owners.ts";
import * as loginThrottle from "./migrations/018-login-throttle.ts";
import * as controlPlane from "./migrations/019-control-plane.ts";
import * as keyModels from "./migrations/020-key-models.ts";
import * as agentSessions from "./migrations/023-agent-sessions.ts";
import * as batchCommit from "./migrations/024-batch-commit.ts";
import { prepareMarked } from "./prepared.ts";
import type { Database } from "./schema.ts";
import { openSqlite } from "./sqlite-adapter.ts";

export type DialectName = "sqlite" | "postgres";

export interface Store {
  db: Kysely<Database>;
  dialect: DialectName;
  /** where the data lives, without credentials: for logs and `config check` */
  location: string;
  close(): Promise<void>;
}

export interface StoreOptions {
  data_dir: string;
  database_url?: string | undefined;
}

const migrations: Record<string, Migration> = {
  "001-initial": initial,
  "002-rate-limits": rateLimits,
  "003-safety": safety,
  "004-console": consoleTables,
  "005-console-indexes": consoleIndexes,
  "006-uncharged-tokens": unchargedTokens,
  "007-cache-tokens": cacheTokens,
  "008-attempts": attempts,
  "009-overruns": overruns,
  "010-shared-ledger": sharedLedger,
  "011-prices": prices,
  "012-client-api": clientApi,
  "013-stored-responses": storedResponses,
  "015-shared-money": sharedMoney,
  "016-ledger-charges": ledgerCharges,
  "017-stored-response-owners": storedResponseOwners,
  "018-login-throttle": loginThrottle,
  "019-control-plane": controlPlane,
  "020-key-models": keyModels,
  "023-agent-sessions": agentSessions,
  "024-batch-commit": batchCommit,
};

// PostgreSQL's bigint (int8) comes back as a string by default; our counters stay far below
// 2^53, so read them as numbers. Scoped to our pools rather than pg's global parsers.
const pgTypes = {
  getTypeParser: (oid: number, format?: any) =>
    oid === 20 ? (v: string) => Number(v) : (postgresDriver().types.getTypeParser as any)(oid, format),
};

export function openStore(options: StoreOptions, onConnectionError: (err: Error) => void = () => {}): Store {
  if (options.database_url) {
    // a connection the server drops is reported, replaced, and never ends the process
    const pool = postgresPool(
      {
        connectionString: options.database_url,
        max: 10,
        types: pgTypes as any,
        application_name: PG_APPLICATION.store,
      },
      onConnectionError,
    );
    pool.on("connect", prepareMarked);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    const url = new URL(options.database_url);
    return {
      db,
      dialect: "postgres",
      location: `postgres://${url.host}${url.pathname}`,
      close: () => db.destroy(),
    };
  }
  mkdirSync(options.data_dir, { recursive: true });
  const file = join(options.data_dir, "gateway.sqlite");
  const { database } = openSqlite(file);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  return { db, dialect: "sqlite", location: file, close: () => db.destroy() };
}

/** Applies pending migrations; returns the names applied. */
/**
 * The store was migrated by a newer version of the gateway than this one: going back to an
 * older version means restoring the backup taken before the upgrade (docs/operations.md).
 */
export class StoreNewerError extends Error {
  constructor(migration: string) {
    super(
      `the store was migrated by a newer version of the gateway (its migration ${migration} is unknown to this one): ` +
        "run that version, or restore the backup taken before the upgrade",
    );
  }
}

export async function migrate(store: Store): Promise<string[]> {
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations },
  });
  // PostgreSQL serialises concurrent migrators with an advisory lock; Kysely's SQLite lock is
  // a no-op, so two processes starting on a new file (server and CLI) can race: the loser
  // fails on a table or column the winner just made. By the time it retries, the winner has
  // recorded the migration. A genuine error fails every attempt and is thrown after the last.
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
    const newer = /previously executed migration (\S+) is missing/.exec(String((error as Error)?.message));
    if (newer) throw new StoreNewerError(newer[1]!);
    if (store.dialect !== "sqlite" || attempt >= 6) throw error;
    await new Promise((r) => setTimeout(r, 50 * attempt + Math.random() * 50));
  }
}

/** A cheap round trip, for /readyz. */
export async function ping(store: Store): Promise<void> {
  await sql`select 1`.execute(store.db);
}

/**
 * The migrations of this version the store has not applied, for /readyz: none after a start
 * (it applies them), some if the store was replaced under a running gateway (a restore).
 */
export async function pendingMigrations(store: Store): Promise<string[]> {
  const { rows } = await sql<{
    name: string;
  }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(store.db);
  const applied = new Set(rows.map((r) => r.name));
  return Object.keys(migrations).filter((name) => !applied.has(name));
}
