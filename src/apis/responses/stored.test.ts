import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createTestDatabase, storeSuite, type TestDatabase } from "../../../test/support/postgres.ts";
import { createAccount } from "../../accounts/accounts.ts";
import type { GatewayError } from "../../errors/index.ts";
import { migrate, openStore, type Store } from "../../store/db.ts";
import type { InputItem } from "./request.ts";
import { type Owner, pruneStoredResponses, ResponseStore, type StoreLimits } from "./stored.ts";

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
    const LIMITS: StoreLimits = {
      visibility: "key",
      max_stored_bytes: 16 * 1024 * 1024,
      max_account_bytes: 1024 * 1024 * 1024,
      max_continued_bytes: 32 * 1024 * 1024,
    };
    let limits = { ...LIMITS };
    let alice: Owner;
    let bob: Owner;
    /** another key of alice's account */
    let aliceCi: Owner;

    before(async () => {
      if (kind === "postgres") {
        database = await createTestDatabase();
        store = openStore({ data_dir: "unused", database_url: database.url });
      } else {
        dir = mkdtempSync(join(tmpdir(), "gw-stored-responses-"));
        store = openStore({ data_dir: dir });
      }
      await migrate(store);
      responses = new ResponseStore(
        store.db,
        () => days,
        () => limits,
      );
      const aliceAccount = (await createAccount(store.db, { name: "alice", plan_id: "p" })).id;
      alice = { accountId: aliceAccount, keyId: "key_alice" };
      aliceCi = { accountId: aliceAccount, keyId: "key_alice_ci" };
      bob = {
        accountId: (await createAccount(store.db, { name: "bob", plan_id: "p" })).id,
        keyId: "key_bob",
      };
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

    // Second audit, item 10: every key of an account read, continued and deleted every other
    // key's responses, also after that key was disabled.
    test("a response is its key's: another key of the account neither reads, continues nor deletes it", async () => {
      await responses.save(alice, turn("resp_k1", null, "mine", "yes"), NOW);
      assert.equal(await responses.get(aliceCi, "resp_k1", NOW), undefined);
      await assert.rejects(responses.conversation(aliceCi, "resp_k1", NOW), /not found/);
      assert.equal(await responses.item(aliceCi, "msg_resp_k1", NOW), undefined);
      assert.equal(await responses.delete(aliceCi, "resp_k1"), false);
      assert.ok(await responses.get(alice, "resp_k1", NOW), "still its key's");
      limits = { ...LIMITS, visibility: "account" };
      try {
        assert.ok(
          await responses.get(aliceCi, "resp_k1", NOW),
          "visibility account: every key of the account",
        );
        assert.equal(await responses.get(bob, "resp_k1", NOW), undefined, "never another account's");
      } finally {
        limits = { ...LIMITS };
      }
      // rows kept before keys were recorded stay their account's
      await store.db
        .updateTable("stored_responses")
        .set({ key_id: null })
        .where("id", "=", "resp_k1")
        .execute();
      assert.ok(await responses.get(aliceCi, "resp_k1", NOW));
    });

    // Second audit, item 3: 20 requests with a 900 KB junk field grew the store from 47 to 64 MB,
    // and continuations of a chain of 25 such turns re-read 22.5 MB each.
    test("what is kept is bounded: per response (413), per account (429), per continuation (413)", async () => {
      const big = [{ type: "message", role: "user", content: "x".repeat(2_000) }];
      limits = { ...LIMITS, max_stored_bytes: 1_000 };
      try {
        await assert.rejects(
          responses.admit(alice, big, NOW),
          (err: GatewayError) =>
            err.status === 413 &&
            err.errorName === "stored_response_too_large" &&
            /max_stored_bytes/.test(err.message),
        );
        assert.equal(
          await responses.save(
            alice,
            { ...turn("resp_big", null, "x".repeat(2_000), "y"), id: "resp_big" },
            NOW,
          ),
          false,
        );
        assert.equal(
          await responses.get(alice, "resp_big", NOW),
          undefined,
          "an answer over the bound is not kept",
        );
      } finally {
        limits = { ...LIMITS };
      }
      const held = await store.db
        .selectFrom("stored_responses")
        .select((eb) => eb.fn.sum<number>("bytes").as("total"))
        .where("account_id", "=", alice.accountId)
        .where("created_at", ">=", NOW - days * DAY)
        .executeTakeFirstOrThrow();
      limits = { ...LIMITS, max_account_bytes: Number(held.total) + 10 };
      try {
        await assert.rejects(
          responses.admit(alice, big, NOW),
          (err: GatewayError) => err.status === 429 && err.errorName === "stored_responses_full",
        );
        await responses.admit(bob, [{ type: "message", role: "user", content: "small" }], NOW); // its own room
      } finally {
        limits = { ...LIMITS };
      }
      limits = { ...LIMITS, max_continued_bytes: 200 };
      try {
        await assert.rejects(
          responses.conversation(alice, "resp_3", NOW),
          (err: GatewayError) =>
            err.status === 413 &&
            err.param === "previous_response_id" &&
            /max_continued_bytes/.test(err.message),
        );
      } finally {
        limits = { ...LIMITS };
      }
    });
  });
}
