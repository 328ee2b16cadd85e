// The catalog's rows in the store: one per entry, its secrets sealed apart, and its revision
// (row 2 of the revision table, beside the accounts' row 1), which every instance polls. The
// revision row is absent until the catalog is first written: that is how a store-managed
// gateway knows to seed it from the file, and only one of several instances starting
// together on an empty store does (the insert of the row is the race's referee).
import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../store/schema.ts";
import type { SecretBox } from "./secret-box.ts";
import { joinSecrets, type ProviderSecrets, splitSecrets } from "./secrets.ts";
import { CATALOG_KINDS, type CatalogEntry, type CatalogKind } from "./types.ts";

export const CATALOG_REVISION_ID = 2;

export type CatalogData = Record<CatalogKind, CatalogEntry[]>;

export class CatalogSecretsError extends Error {
  override name = "CatalogSecretsError";
}

type Db = Kysely<Database> | Transaction<Database>;

/** The catalog's revision; undefined: the store holds no catalog yet. */
export async function readCatalogRevision(db: Db): Promise<number | undefined> {
  const row = await db
    .selectFrom("revision")
    .select("value")
    .where("id", "=", CATALOG_REVISION_ID)
    .executeTakeFirst();
  return row ? Number(row.value) : undefined;
}

/** The stored catalog with its secrets opened, in each list's order. */
export async function readCatalog(db: Db, box: SecretBox | undefined): Promise<CatalogData> {
  const rows = await db.selectFrom("catalog_entries").selectAll().orderBy("position").orderBy("id").execute();
  const data: CatalogData = { providers: [], models: [], plans: [] };
  for (const row of rows) {
    if (!(CATALOG_KINDS as readonly string[]).includes(row.kind)) continue;
    let secrets: ProviderSecrets | undefined;
    if (row.secrets !== null) {
      if (!box)
        throw new CatalogSecretsError(
          `the stored provider "${row.id}" has upstream secrets: set GATEWAY_SECRET_KEY to the key they were stored under`,
        );
      secrets = JSON.parse(box.open(row.secrets)) as ProviderSecrets;
    }
    data[row.kind as CatalogKind].push(joinSecrets(JSON.parse(row.body) as CatalogEntry, secrets));
  }
  return data;
}

/** Seals an entry's secrets; refuses them without a key to seal them with. */
function sealed(kind: CatalogKind, entry: CatalogEntry, box: SecretBox | undefined) {
  const { body, secrets } = splitSecrets(kind, entry);
  if (secrets && !box)
    throw new CatalogSecretsError(
      `provider "${entry.id}" has upstream secrets (api_keys or headers): set GATEWAY_SECRET_KEY (32 characters or more) so the store holds them encrypted`,
    );
  return { body: JSON.stringify(body), secrets: secrets ? box!.seal(JSON.stringify(secrets)) : null };
}

/**
 * Writes the kinds given, whole (entries absent from a list are deleted), and bumps the
 * revision; in the caller's transaction, which holds the revision row's lock from its first
 * statement (lockCatalog), so two changes never interleave.
 */
export async function writeCatalog(
  trx: Transaction<Database>,
  kinds: Partial<CatalogData>,
  box: SecretBox | undefined,
  now = Date.now(),
): Promise<void> {
  for (const [kind, entries] of Object.entries(kinds) as [CatalogKind, CatalogEntry[]][]) {
    await trx.deleteFrom("catalog_entries").where("kind", "=", kind).execute();
    let position = 0;
    for (const entry of entries)
      await trx
        .insertInto("catalog_entries")
        .values({ kind, id: entry.id, position: position++, ...sealed(kind, entry, box), updated_at: now })
        .execute();
  }
  await trx
    .updateTable("revision")
    .set((eb) => ({ value: eb("value", "+", 1) }))
    .where("id", "=", CATALOG_REVISION_ID)
    .execute();
}

/**
 * Takes the catalog's lock for a change: the revision row, updated in place so PostgreSQL
 * holds its row lock to the commit (SQLite has one writer anyway). Returns the revision the
 * change starts from; undefined: there is no catalog to change.
 */
export async function lockCatalog(trx: Transaction<Database>): Promise<number | undefined> {
  const row = await trx
    .updateTable("revision")
    .set({ value: sql`value` })
    .where("id", "=", CATALOG_REVISION_ID)
    .returning("value")
    .executeTakeFirst();
  return row ? Number(row.value) : undefined;
}

/**
 * Seeds the store's catalog from `data` unless it has one. Returns whether this call seeded
 * it: of several instances racing on an empty store, one does, the others read its catalog.
 */
export async function seedCatalog(db: Kysely<Database>, data: CatalogData, box: SecretBox | undefined) {
  return db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto("revision")
      .values({ id: CATALOG_REVISION_ID, value: 0 })
      .onConflict((oc) => oc.column("id").doNothing())
      .executeTakeFirst();
    if (!inserted.numInsertedOrUpdatedRows) return false;
    await writeCatalog(trx, data, box);
    return true;
  });
}
