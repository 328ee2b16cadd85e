import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { sql } from "kysely";
import pg from "pg";
import { createTestDatabase, needsPostgres, type TestDatabase } from "../../test/support/postgres.ts";
import { until } from "../../test/support/stream-assertions.ts";
import { startTcpProxy } from "../../test/support/tcp-proxy.ts";
import { migrate, openStore, ping, type Store, StoreNewerError } from "./db.ts";

describe("PostgreSQL store", await needsPostgres(), () => {
  let database: TestDatabase;
  let store: Store;
  const errors: Error[] = [];
  before(async () => {
    database = await createTestDatabase();
    store = openStore({ data_dir: "unused", database_url: database.url }, (err) => errors.push(err));
    await migrate(store);
  });
  after(async () => {
    await store.close();
    await database.drop();
  });

  it("survives the server dropping its idle connections, and reports it", async () => {
    await ping(store); // leaves an idle connection in the pool
    const name = new URL(database.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const killed = await admin.query(
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
        [name],
      );
      assert.ok(killed.rowCount! >= 1, "the store had an open connection to drop");
    } finally {
      await admin.end();
    }
    for (let i = 0; i < 100 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(errors.length >= 1, "the dropped connection was reported, not thrown");
    await ping(store); // a new connection serves the next query
  });

  it("names its connections in pg_stat_activity, unless the operator's URL names them", async () => {
    const name = new URL(database.url).pathname.slice(1);
    const named = async (db: Store) =>
      (
        await sql<{ application_name: string }>`select application_name from pg_stat_activity
          where pid = pg_backend_pid() and datname = ${name}`.execute(db.db)
      ).rows[0]?.application_name;
    assert.equal(await named(store), "chat-gateway");
    const url = new URL(database.url);
    url.searchParams.set("application_name", "billing-gateway");
    const own = openStore({ data_dir: "unused", database_url: url.toString() });
    try {
      assert.equal(await named(own), "billing-gateway");
    } finally {
      await own.close();
    }
  });

  it("survives its connection breaking in the middle of a query: the query fails, nothing is thrown", async () => {
    // the network between the store and the server cut while a query runs, as in a failover
    const server = new URL(database.url);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const through = new URL(database.url);
    through.host = `127.0.0.1:${proxy.port}`;
    const cut = openStore({ data_dir: "unused", database_url: through.toString() });
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      // Kysely's query holds its connection (checked out of the pool, which stops listening to it)
      const sleeping = sql`select pg_sleep(5)`.execute(cut.db).then(
        () => undefined,
        (err: unknown) => err,
      );
      await until(
        async () =>
          Boolean(
            (await admin.query("select 1 from pg_stat_activity where query = 'select pg_sleep(5)'")).rowCount,
          ),
        "the query runs",
        5_000,
      );
      await proxy.cut();
      assert.match(String(await sleeping), /terminated/, "the query fails");
      // an error event nobody listened to would be an uncaught exception by now, failing this file
      await new Promise((r) => setTimeout(r, 100));
      await proxy.restore();
      await ping(cut); // a new connection serves the next query
    } finally {
      await admin.end();
      await cut.close();
      await proxy.close();
    }
  });
});

describe("a store migrated by a newer version", () => {
  it("refuses to start an older version with what to do, not the migrator's own error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-db-"));
    const store = openStore({ data_dir: dir });
    try {
      await migrate(store);
      await sql`insert into kysely_migration (name, timestamp) values ('999_from_a_newer_version', '2099-01-01')`.execute(
        store.db,
      );
      await assert.rejects(migrate(store), (err: Error) => {
        assert.ok(err instanceof StoreNewerError);
        assert.match(err.message, /newer version of the gateway \(its migration 999_from_a_newer_version/);
        assert.match(err.message, /restore the backup/);
        return true;
      });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
