// The first start on an empty store makes the default account, its key and the console's first
// admin. Instances started together on one empty PostgreSQL store (a compose file, a Helm
// release of two replicas) race for it: one makes them, the others start without a first key,
// and none fails or stays up half-started.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { configSchema } from "../src/config/cross-check.ts";
import { createLogger } from "../src/observability/logger.ts";
import { type Gateway, startGateway } from "../src/server.ts";
import { testConfig } from "./support/gateway.ts";
import { createTestDatabase, storeSuite, type TestDatabase } from "./support/postgres.ts";

describe("instances starting together on one empty PostgreSQL store", await storeSuite("postgres"), () => {
  let database: TestDatabase;
  const gateways: Gateway[] = [];
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    for (const gateway of gateways) await gateway.close();
    await database.drop();
  });

  it("one makes the first account, key and admin; the others start without them", async () => {
    const input = testConfig(undefined);
    const config = configSchema.parse({ ...input, store: { ...input.store, database_url: database.url } });
    const logger = createLogger("silent");
    const started = await Promise.allSettled(
      Array.from({ length: 3 }, () => startGateway(config, { logger, env: {} })),
    );
    for (const result of started) if (result.status === "fulfilled") gateways.push(result.value);
    assert.deepEqual(
      started.map((r) => r.status),
      ["fulfilled", "fulfilled", "fulfilled"],
      String(started.find((r) => r.status === "rejected")?.reason),
    );
    const first = gateways.filter((g) => g.firstKey);
    assert.equal(first.length, 1, "exactly one instance made the first start");
    assert.ok(first[0]!.firstAdmin);
    const accounts = await gateways[0]!.deps.store.db.selectFrom("accounts").select("name").execute();
    assert.deepEqual(
      accounts.map((a) => a.name),
      ["default"],
    );
    const keys = await gateways[0]!.deps.store.db.selectFrom("api_keys").select("id").execute();
    assert.equal(keys.length, 1);
    // the key it printed works on every instance
    for (const gateway of gateways) {
      const res = await fetch(`${gateway.url}/v1/models`, {
        headers: { authorization: `Bearer ${first[0]!.firstKey!.secret}` },
      });
      assert.equal(res.status, 200);
    }
  });
});
