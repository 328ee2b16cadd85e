// A migrated store for one suite of the tests of modules that read and write it (src/accounts/,
// the record writer's statements): SQLite in a temporary folder, or a fresh PostgreSQL
// database, opened before the suite's tests and gone after them. Call it inside
// describe(kind, await storeSuite(kind), ...).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { readRevision } from "../../src/accounts/revision.ts";
import { migrate, openStore, type Store } from "../../src/store/db.ts";
import { createTestDatabase, type TestDatabase } from "./postgres.ts";

/** The suite's store; read `.db` inside tests and hooks (it opens in the suite's before()). */
export function suiteStore(kind: "sqlite" | "postgres"): { readonly db: Store["db"] } {
  let store: Store | undefined;
  let dir: string | undefined;
  let database: TestDatabase | undefined;

  before(async () => {
    if (kind === "postgres") {
      database = await createTestDatabase();
      store = openStore({ data_dir: "unused", database_url: database.url });
    } else {
      dir = mkdtempSync(join(tmpdir(), "gw-store-test-"));
      store = openStore({ data_dir: dir });
    }
    assert.equal(store.dialect, kind);
    await migrate(store);
  });

  after(async () => {
    await store?.close();
    await database?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  return {
    get db() {
      assert.ok(store, "the suite's store opens in its before()");
      return store.db;
    },
  };
}

/** Runs the change and asserts it bumped the revision exactly once: a change without a bump stays cached. */
export async function bumpsOnce<T>(
  store: { db: Store["db"] },
  what: string,
  change: () => Promise<T>,
): Promise<T> {
  const before = await readRevision(store.db);
  const result = await change();
  assert.equal(await readRevision(store.db), before + 1, `${what} bumps the revision once`);
  return result;
}
