import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { callRecord } from "../../test/support/call-record.ts";
import { storeSuite } from "../../test/support/postgres.ts";
import { suiteStore } from "../../test/support/suite-store.ts";
import { createAccount } from "../accounts/accounts.ts";
import { createKey } from "../accounts/keys.ts";
import type { DailyDelta } from "./daily-usage.ts";
import { compileStatements, type Statements } from "./statements.ts";

for (const kind of ["sqlite", "postgres"] as const) {
  describe(kind, await storeSuite(kind), () => {
    const store = suiteStore(kind);
    let sql: Statements;
    let accountId: string;
    let keyId: string;

    before(async () => {
      sql = compileStatements(store.db);
      accountId = (await createAccount(store.db, { name: "statements", plan_id: "default" })).id;
      keyId = (await createKey(store.db, { account_id: accountId })).key.id;
    });

    const counters = async (table: "accounts" | "api_keys", id: string) => {
      const row = await store.db
        .selectFrom(table)
        .select(["used_tokens", "spent_nanos", "month_spent_nanos", "spent_month"])
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      return { ...row };
    };

    test("insert: a batch's records in one statement, every field of each once and as given", async () => {
      const records = [
        callRecord({ account_id: accountId, key_id: keyId, prompt_tokens: 3, cost_nanos: 7 }),
        callRecord({ status: "error", http_status: 502, error_code: "upstream_error", stream: 1 }),
        callRecord({ safety_categories: '["x"]', attempts: "[]", ttft_ms: 4, public_model: null }),
      ];
      const statement = sql.insert(records);
      assert.equal(statement.parameters.length, records.length * Object.keys(records[0]!).length);
      await store.db.executeQuery(statement);
      const rows = await store.db
        .selectFrom("call_records")
        .selectAll()
        .where(
          "request_id",
          "in",
          records.map((r) => r.request_id),
        )
        .execute();
      const byId = new Map(rows.map((r) => [r.request_id, { ...r }]));
      for (const r of records) assert.deepEqual(byId.get(r.request_id), r);
    });

    test("addToKey and addToAccount add tokens to the consumption counters", async () => {
      const before = {
        key: await counters("api_keys", keyId),
        account: await counters("accounts", accountId),
      };
      await store.db.executeQuery(sql.addToKey(keyId, 30));
      await store.db.executeQuery(sql.addToAccount(accountId, 45));
      assert.equal(
        Number((await counters("api_keys", keyId)).used_tokens),
        Number(before.key.used_tokens) + 30,
      );
      assert.equal(
        Number((await counters("accounts", accountId)).used_tokens),
        Number(before.account.used_tokens) + 45,
      );
    });

    test("spend adds to the total and the month's figure; a new month's first charge restarts the month", async () => {
      for (const table of ["accounts", "api_keys"] as const) {
        const id = table === "accounts" ? accountId : keyId;
        const start = Number((await counters(table, id)).spent_nanos);
        const spent = async () => {
          const c = await counters(table, id);
          return [Number(c.spent_nanos) - start, Number(c.month_spent_nanos), c.spent_month];
        };
        await store.db.executeQuery(sql.spend(table, id, 100, "2026-05"));
        await store.db.executeQuery(sql.spend(table, id, 20, "2026-05"));
        assert.deepEqual(await spent(), [120, 120, "2026-05"], table);
        await store.db.executeQuery(sql.spend(table, id, 5, "2026-06"));
        assert.deepEqual(await spent(), [125, 5, "2026-06"], table);
      }
    });

    test("addToDaily inserts new groups and adds to existing ones, column by column", async () => {
      const delta = (key_id: string, n: number): DailyDelta => ({
        account_id: accountId,
        day: "2026-05-17",
        key_id,
        model: "demo",
        prompt_tokens: n,
        completion_tokens: 2 * n,
        total_tokens: 3 * n,
        calls: 1,
        cost_nanos: 10 * n,
      });
      await store.db.executeQuery(sql.addToDaily([delta("", 1), delta(keyId, 2)]));
      await store.db.executeQuery(sql.addToDaily([delta(keyId, 5)]));
      const rows = await store.db
        .selectFrom("daily_usage")
        .selectAll()
        .where("account_id", "=", accountId)
        .orderBy("key_id")
        .execute();
      assert.deepEqual(
        rows.map((r) =>
          Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "string" ? v : Number(v)])),
        ),
        [delta("", 1), { ...delta(keyId, 7), calls: 2 }],
      );
    });
  });
}
