import assert from "node:assert/strict";
import { test } from "node:test";
import type pg from "pg";
import { createTestDatabase, storeSuite } from "../../test/support/postgres.ts";
import { openStore } from "./db.ts";
import { prepared, prepareMarked } from "./prepared.ts";

test("a marked text goes out as a named statement; any other query as it came", () => {
  const sent: unknown[][] = [];
  const client = { query: (...args: unknown[]) => sent.push(args) } as unknown as pg.PoolClient;
  prepareMarked(client);
  const text = prepared("select $1::int + 1 as marked_test");
  client.query(text, [1]);
  client.query("select 2", [2]);
  client.query({ text: "select 3" });
  const [first, second, third] = sent;
  assert.match((first![0] as { name: string }).name, /^gw_\d+$/);
  assert.deepEqual(first![0], { name: (first![0] as { name: string }).name, text, values: [1] });
  assert.deepEqual(second, ["select 2", [2]]);
  assert.deepEqual(third, [{ text: "select 3" }]);
  assert.equal(prepared(text), text, "marking twice changes nothing");
});

test(
  "on PostgreSQL, a marked statement is prepared on the connection that ran it",
  await storeSuite("postgres"),
  async () => {
    const database = await createTestDatabase();
    const store = openStore({ data_dir: "unused", database_url: database.url });
    try {
      const text = prepared(
        "select $1::int * 2 as doubled, (select count(*) from pg_prepared_statements where statement like '%doubled%') as seen",
      );
      const { rows } = await store.db.executeQuery<{ doubled: number; seen: number }>({
        sql: text,
        parameters: [21],
        query: { kind: "RawNode" } as never,
        queryId: { queryId: "prepared-test" },
      });
      assert.equal(rows[0]!.doubled, 42);
      assert.equal(Number(rows[0]!.seen), 1, "the server holds it as a prepared statement of this session");
    } finally {
      await store.close();
      await database.drop();
    }
  },
);
