import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createTestDatabase, storeSuite, type TestDatabase } from "../../../test/support/postgres.ts";
import { createAccount } from "../../accounts/repository.ts";
import type { GatewayError } from "../../errors/index.ts";
import { migrate, openStore, type Store } from "../../store/db.ts";
import type { InputItem } from "./request.ts";
import { pruneStoredResponses, ResponseStore } from "./stored.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2031, 0, 15, 12);

const turn = (id: string, previous: string | null, said: string, answered: string) => ({
  id,
  previousResponseId: previous,
  input: [{ type: "message", role: "user", content: said }] as InputItem[],
  response: JSON.stringify({
    id,
    object: "response",
    output: [
      {
        type: "message",
        id: `msg_${id}`,
        role: "assistant",
        content: [{ type: "output_text", text: answered }],
      },
    ],
  }),
});

const texts = (items: InputItem[]) =>
  items.map((i) =>
    i.type === "message"
      ? typeof i.content === "string"
        ? i.content
        : ((i.content as unknown[])[0] as { text: string }).text
      : i.type,
  );

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`stored responses (${kind})`, await storeSuite(kind), () => {
    let store: Store;
    let dir: string | undefined;
    let database: TestDatabase | undefined;
    let responses: ResponseStore;
    let days = 30;
    let alice: string;
    let bob: string;

    before(async () => {
      if (kind === "postgres") {
        database = await createTestDatabase();
        store = openStore({ data_dir: "unused", database_url: database.url });
      } else {
        dir = mkdtempSync(join(tmpdir(), "gw-stored-responses-"));
        store = openStore({ data_dir: dir });
      }
      await migrate(store);
      responses = new ResponseStore(store.db, () => days);
      alice = (await createAccount(store.db, { name: "alice", plan_id: "p" })).id;
      bob = (await createAccount(store.db, { name: "bob", plan_id: "p" })).id;
      await responses.save(alice, turn("resp_1", null, "one", "first"), NOW - 3 * DAY);
      await responses.save(alice, turn("resp_2", "resp_1", "two", "second"), NOW - 2 * DAY);
      await responses.save(alice, turn("resp_3", "resp_2", "three", "third"), NOW - DAY);
      await responses.save(bob, turn("resp_b", null, "bob's", "answer"), NOW);
    });

    after(async () => {
      await store?.close();
      await database?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("a conversation is every turn's input then output, oldest first, in one read", async () => {
      assert.deepEqual(texts(await responses.conversation(alice, "resp_3", NOW)), [
        "one",
        "first",
        "two",
        "second",
        "three",
        "third",
      ]);
      assert.deepEqual(texts(await responses.conversation(alice, "resp_1", NOW)), ["one", "first"]);
    });

    test("an account reads only its own: another's id is not found", async () => {
      assert.equal(await responses.get(alice, "resp_b", NOW), undefined);
      assert.match((await responses.get(bob, "resp_b", NOW))!, /"resp_b"/);
      await assert.rejects(
        responses.conversation(alice, "resp_b", NOW),
        (err: GatewayError) => err.param === "previous_response_id" && /not found/.test(err.message),
      );
      assert.equal(await responses.delete(alice, "resp_b"), false);
      assert.ok(await responses.get(bob, "resp_b", NOW), "still there for its account");
    });

    test("expired responses are neither served nor continued, and retention deletes them", async () => {
      days = 2;
      try {
        assert.equal(await responses.get(alice, "resp_1", NOW), undefined);
        assert.ok(await responses.get(alice, "resp_3", NOW));
        await assert.rejects(
          responses.conversation(alice, "resp_3", NOW),
          (err: GatewayError) =>
            err.param === "previous_response_id" && /no longer be continued/.test(err.message),
        );
      } finally {
        days = 30;
      }
      await responses.save(alice, turn("resp_old", null, "old", "x"), NOW - 40 * DAY);
      assert.equal(await pruneStoredResponses(store.db, 30, NOW), 1);
      assert.equal(await pruneStoredResponses(store.db, 30, NOW), 0);
      assert.ok(await responses.get(alice, "resp_1", NOW));
    });

    test("deleting a turn breaks the conversations that continue it, not the ones before", async () => {
      await responses.save(alice, turn("resp_x1", null, "a", "b"), NOW);
      await responses.save(alice, turn("resp_x2", "resp_x1", "c", "d"), NOW);
      await responses.save(alice, turn("resp_x3", "resp_x2", "e", "f"), NOW);
      assert.equal(await responses.delete(alice, "resp_x2"), true);
      assert.equal(await responses.get(alice, "resp_x2", NOW), undefined);
      await assert.rejects(responses.conversation(alice, "resp_x3", NOW), /resp_x2/);
      assert.deepEqual(texts(await responses.conversation(alice, "resp_x1", NOW)), ["a", "b"]);
    });
  });
}
