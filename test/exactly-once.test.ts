// Issue (Exact accounting): each reservation is settled or released exactly once, whatever
// fails and in whatever order. Failures are provoked for real at each step: an upstream error
// before the first byte, an upstream drop mid-stream, a client that leaves before the answer
// or mid-stream, upstream timeouts, a store that cannot commit (its table renamed away from a
// second connection), a shutdown with calls in flight, and all of them at once. After each:
// no reservation open, nothing held for the key or the account, the ledger's consumption
// equals the stored counters and the records' sum (except the documented store-error rule:
// the charge stays in the ledger, the record is missing), and the key keeps working.
// Run on SQLite and on PostgreSQL.
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import type { ConfigInput } from "../src/config/schema.ts";
import { countPromptTokens } from "../src/tokens/count.ts";
import {
  type StoreKind,
  startTestGateway,
  TEST_MODEL,
  type TestGateway,
  testConfig,
} from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { mockPromptTokens, parseStream, until } from "./support/stream-assertions.ts";

/** same upstream as TEST_MODEL, with short first-byte and idle timeouts */
const STRICT_MODEL = "gpt-strict";

type Message = { role: "system" | "user"; content: string };

interface Reply {
  status: number;
  requestId: string;
  text: string;
}

function request(gw: TestGateway, secret: string, body: Record<string, unknown>, signal?: AbortSignal) {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

async function post(gw: TestGateway, secret: string, body: Record<string, unknown>): Promise<Reply> {
  const res = await request(gw, secret, body);
  return { status: res.status, requestId: res.headers.get("x-request-id") ?? "", text: await res.text() };
}

/** An independent connection to the gateway's store: to break it for a moment, or to read it after shutdown. */
interface SecondConnection {
  exec(sql: string): Promise<void>;
  all(sql: string, params: unknown[]): Promise<any[]>;
  close(): Promise<void>;
}

async function secondConnection(gw: TestGateway): Promise<SecondConnection> {
  const { store, config } = gw.gateway.deps;
  if (store.dialect === "sqlite") {
    const db = new DatabaseSync(store.location);
    db.exec("PRAGMA busy_timeout = 5000");
    return {
      exec: async (sql) => db.exec(sql),
      all: async (sql, params) => db.prepare(sql).all(...(params as string[])),
      close: async () => db.close(),
    };
  }
  const client = new pg.Client({ connectionString: config.store.database_url });
  await client.connect();
  return {
    exec: async (sql) => {
      await client.query(sql);
    },
    all: async (sql, params) => {
      let i = 0;
      return (
        await client.query(
          sql.replace(/\?/g, () => `$${++i}`),
          params,
        )
      ).rows;
    },
    close: () => client.end(),
  };
}

/**
 * The ledger's counters of a key or account once the gateway closed its store: an in-process
 * ledger's own, or a shared ledger's, read from the store with a connection of the test's own.
 */
async function ledgerAfterClose(
  gw: TestGateway,
  conn: SecondConnection,
  kind: "key" | "account",
  id: string,
) {
  const { ledger } = gw.gateway.deps;
  if (!ledger.inspect) return kind === "key" ? ledger.key(id) : ledger.account(id);
  const [row] = (await conn.all(
    `select used_tokens, reserved_tokens from ${kind === "key" ? "api_keys" : "accounts"} where id = ?`,
    [id],
  )) as { used_tokens: number; reserved_tokens: number }[];
  return row && { used: Number(row.used_tokens), reserved: Number(row.reserved_tokens) };
}

/** The store really fails: from another connection, the records' table is renamed away and back. */
async function storeOutage(gw: TestGateway) {
  const conn = await secondConnection(gw);
  return {
    begin: () => conn.exec("ALTER TABLE call_records RENAME TO call_records_away"),
    end: () => conn.exec("ALTER TABLE call_records_away RENAME TO call_records"),
    close: () => conn.close(),
  };
}

function gatewayConfig(upstream: MockUpstream): Partial<ConfigInput> {
  const base = testConfig(upstream);
  return {
    providers: [
      ...base.providers,
      {
        id: "mock-strict",
        type: "openai-compatible",
        base_url: upstream.url,
        api_key_env: "MOCK_UPSTREAM_KEY",
        timeouts: { connect_ms: 500, first_byte_ms: 300, idle_ms: 300, total_ms: 10_000 },
      },
    ],
    models: [
      ...base.models,
      { id: STRICT_MODEL, provider: "mock-strict", upstream_model: "mock-model", max_output_tokens: 256 },
    ],
    plans: [{ id: "default", quota_tokens: 1_000_000_000, models: [TEST_MODEL, STRICT_MODEL] }],
  };
}

interface Key {
  secret: string;
  keyId: string;
  accountId: string;
}

// ---------------------------------------------------------------------------------------------
// The books of a key and its account
// ---------------------------------------------------------------------------------------------

async function stored(gw: TestGateway, table: "api_keys" | "accounts", id: string): Promise<number> {
  const row = await gw.gateway.deps.store.db
    .selectFrom(table)
    .select("used_tokens")
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
  return row.used_tokens;
}

/** Charges the ledger carries without a record (store errors), for a key and its account. */
interface Gap {
  key: number;
  account: number;
}
const NO_GAP: Gap = { key: 0, account: 0 };

/**
 * Every reservation closed; nothing held for the key or the account; the stored counters are
 * the records' sums (unless the records' table is away); the ledger's `used` is the stored
 * counter plus the gap (the charges of calls whose record could not be committed). Returns the
 * key's ledger consumption.
 */
async function assertBooks(gw: TestGateway, key: Key, gap: Gap = NO_GAP, storeDown = false): Promise<number> {
  const { ledger } = gw.gateway.deps;
  await until(() => ledger.openReservations() === 0, "every reservation is closed");
  const keyStored = await stored(gw, "api_keys", key.keyId);
  const accountStored = await stored(gw, "accounts", key.accountId);
  if (!storeDown) {
    assert.equal(
      (await gw.recorded("key_id", key.keyId)).tokens,
      keyStored,
      "key: records add up to the counter",
    );
    assert.equal(
      (await gw.recorded("account_id", key.accountId)).tokens,
      accountStored,
      "account: records add up to the counter",
    );
  }
  const lk = await gw.ledger("key", key.keyId);
  const la = await gw.ledger("account", key.accountId);
  assert.ok(lk && la, "the ledger knows the key and the account");
  assert.equal(lk.reserved, 0, "nothing held for the key");
  assert.equal(la.reserved, 0, "nothing held for the account");
  assert.equal(lk.used, keyStored + gap.key, "ledger (key) = stored counter + unrecorded charges");
  assert.equal(
    la.used,
    accountStored + gap.account,
    "ledger (account) = stored counter + unrecorded charges",
  );
  return lk.used;
}

/** A normal call on the key after the failure: answered, recorded, and charged exactly its usage. */
async function assertKeyStillWorks(gw: TestGateway, key: Key, gap: Gap = NO_GAP): Promise<void> {
  const ledgerBefore = (await gw.ledger("key", key.keyId))!.used;
  const storedBefore = await stored(gw, "api_keys", key.keyId);
  const messages: Message[] = [{ role: "user", content: "all good now mock:tokens=5" }];
  const reply = await post(gw, key.secret, { model: TEST_MODEL, messages });
  assert.equal(reply.status, 200, reply.text);
  const usage = JSON.parse(reply.text).usage;
  assert.equal(usage.total_tokens, mockPromptTokens(messages) + 5);
  const row = await gw.gateway.deps.store.db
    .selectFrom("call_records")
    .selectAll()
    .where("request_id", "=", reply.requestId)
    .executeTakeFirstOrThrow();
  assert.equal(row.status, "ok");
  assert.equal(row.total_tokens, usage.total_tokens);
  assert.equal(
    (await gw.ledger("key", key.keyId))!.used,
    ledgerBefore + usage.total_tokens,
    "charged once, in the ledger",
  );
  assert.equal(
    await stored(gw, "api_keys", key.keyId),
    storedBefore + usage.total_tokens,
    "and in the store",
  );
  await assertBooks(gw, key, gap);
}

// ---------------------------------------------------------------------------------------------
// Clients that leave
// ---------------------------------------------------------------------------------------------

/** Sends a call the mock never answers and hangs up once the mock has read the whole request. */
async function abortBeforeAnswer(
  gw: TestGateway,
  upstream: MockUpstream,
  secret: string,
  body: Record<string, unknown>,
  marker: string,
): Promise<void> {
  const controller = new AbortController();
  const res = request(gw, secret, body, controller.signal);
  res.catch(() => undefined);
  await until(
    () =>
      upstream.requests.some(
        (r) => typeof r.body === "object" && JSON.stringify(r.body.messages).includes(marker),
      ),
    `the upstream receives ${marker}`,
  );
  controller.abort();
  await assert.rejects(res, "the client left before any answer");
}

/** Streams a call that stalls after one word and hangs up once that word arrived. Returns the request id. */
async function abortMidStream(
  gw: TestGateway,
  secret: string,
  body: Record<string, unknown>,
): Promise<string> {
  const controller = new AbortController();
  const res = await request(gw, secret, body, controller.signal);
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes('"content":"Hello"')) {
    const { value, done } = await reader.read();
    assert.ok(!done, "the stream stays open until the client leaves");
    text += decoder.decode(value, { stream: true });
  }
  controller.abort();
  await reader.read().catch(() => undefined);
  return res.headers.get("x-request-id")!;
}

// ---------------------------------------------------------------------------------------------

for (const store of ["sqlite", "postgres"] as const satisfies readonly StoreKind[]) {
  describe(`exactly once (${store})`, await storeSuite(store), () => {
    let upstream: MockUpstream;
    let gw: TestGateway;
    let n = 0;

    before(async () => {
      upstream = await startMockUpstream();
      gw = await startTestGateway({ upstream, store, config: gatewayConfig(upstream) });
    });
    after(async () => {
      await gw?.close();
      await upstream?.close();
    });

    async function freshKey(account?: string): Promise<Key> {
      const accountId = account ?? (await gw.account(`exactly-once-${store}-${++n}`));
      const { id, secret } = await gw.key(accountId);
      return { secret, keyId: id, accountId };
    }

    for (const stream of [false, true]) {
      const mode = stream ? "stream" : "non-stream";

      it(`upstream error before the first byte: released once (${mode})`, async () => {
        const key = await freshKey();
        const reply = await post(gw, key.secret, {
          model: TEST_MODEL,
          stream,
          messages: [{ role: "user", content: "hi mock:status=500" }],
        });
        assert.equal(reply.status, 502);
        assert.equal((await gw.record(reply.requestId)).total_tokens, 0);
        assert.equal(await assertBooks(gw, key), 0);
        await assertKeyStillWorks(gw, key);
      });

      it(`first-byte timeout: released once (${mode})`, async () => {
        const key = await freshKey();
        const reply = await post(gw, key.secret, {
          model: STRICT_MODEL,
          stream,
          messages: [{ role: "user", content: "hi mock:hang" }],
        });
        assert.equal(reply.status, 504);
        assert.equal(JSON.parse(reply.text).error.code, "upstream_timeout");
        assert.equal((await gw.record(reply.requestId)).total_tokens, 0);
        assert.equal(await assertBooks(gw, key), 0);
        await assertKeyStillWorks(gw, key);
      });

      it(`client leaves before the answer: settled once with the prompt (${mode})`, async () => {
        const key = await freshKey();
        const messages: Message[] = [{ role: "user", content: `hi leave-early-${mode} mock:hang` }];
        await abortBeforeAnswer(
          gw,
          upstream,
          key.secret,
          { model: TEST_MODEL, stream, messages },
          `leave-early-${mode}`,
        );
        await until(async () => (await gw.recorded("key_id", key.keyId)).calls === 1, "the call is recorded");
        const row = await gw.gateway.deps.store.db
          .selectFrom("call_records")
          .selectAll()
          .where("key_id", "=", key.keyId)
          .executeTakeFirstOrThrow();
        assert.equal(row.status, "client_disconnect");
        assert.equal(row.total_tokens, countPromptTokens(messages), "the prompt only");
        assert.equal(await assertBooks(gw, key), countPromptTokens(messages));
        await assertKeyStillWorks(gw, key);
      });
    }

    it("upstream drop mid-stream: settled once with the delivered tokens", async () => {
      const key = await freshKey();
      const messages: Message[] = [{ role: "user", content: "hi mock:drop-after=4" }];
      const reply = await post(gw, key.secret, { model: TEST_MODEL, stream: true, messages });
      const s = parseStream(reply.text);
      assert.equal(s.done, false);
      assert.equal(s.events.at(-1).error.code, "upstream_error");
      assert.equal(s.contents.length, 4);
      assert.equal((await gw.record(reply.requestId)).total_tokens, countPromptTokens(messages) + 4);
      assert.equal(await assertBooks(gw, key), countPromptTokens(messages) + 4);
      await assertKeyStillWorks(gw, key);
    });

    it("idle timeout mid-stream: settled once with the delivered tokens", async () => {
      const key = await freshKey();
      const messages: Message[] = [{ role: "user", content: "hi mock:hang-after=3" }];
      const reply = await post(gw, key.secret, { model: STRICT_MODEL, stream: true, messages });
      const s = parseStream(reply.text);
      assert.equal(s.done, false);
      assert.equal(s.events.at(-1).error.code, "upstream_timeout");
      assert.equal(s.contents.length, 3);
      assert.equal(await assertBooks(gw, key), countPromptTokens(messages) + 3);
      await assertKeyStillWorks(gw, key);
    });

    it("client leaves mid-stream: settled once with the prompt and the delivered word", async () => {
      upstream.reset();
      const key = await freshKey();
      const messages: Message[] = [{ role: "user", content: "hi mock:hang-after=1" }];
      const requestId = await abortMidStream(gw, key.secret, { model: TEST_MODEL, stream: true, messages });
      await until(() => upstream.aborted() === 1, "the gateway aborts the upstream call");
      await until(async () => (await gw.recorded("key_id", key.keyId)).calls === 1, "the call is recorded");
      const row = await gw.record(requestId);
      assert.equal(row.status, "client_disconnect");
      assert.equal(row.completion_tokens, 1);
      assert.equal(await assertBooks(gw, key), countPromptTokens(messages) + 1);
      await assertKeyStillWorks(gw, key);
    });

    it("store error: 503 store_unavailable or an SSE error event; settled once, nothing charged (issue #17)", async () => {
      const key = await freshKey();
      const outage = await storeOutage(gw);
      try {
        await outage.begin();

        // non-streaming: the answer is withheld; a call the gateway could not record is not charged
        const jsonMessages: Message[] = [{ role: "user", content: "record me mock:tokens=6" }];
        const json = await post(gw, key.secret, { model: TEST_MODEL, messages: jsonMessages });
        assert.equal(json.status, 503, json.text);
        assert.equal(JSON.parse(json.text).error.code, "store_unavailable");
        assert.equal(
          await assertBooks(gw, key, NO_GAP, true),
          0,
          "the ledger holds no charge the store lacks",
        );

        // streaming: every chunk, then the error event instead of [DONE]
        const streamMessages: Message[] = [{ role: "user", content: "record me too mock:tokens=6" }];
        const streamed = await post(gw, key.secret, {
          model: TEST_MODEL,
          stream: true,
          stream_options: { include_usage: true },
          messages: streamMessages,
        });
        const s = parseStream(streamed.text);
        assert.equal(s.done, false, "no [DONE] for a call that was not recorded");
        assert.equal(s.contents.length, 6);
        assert.equal(s.events.at(-1).error?.code, "store_unavailable");
        const usage = s.events.find((e) => Array.isArray(e.choices) && e.choices.length === 0)?.usage;
        assert.equal(usage?.total_tokens, mockPromptTokens(streamMessages) + 6);
        assert.equal(await assertBooks(gw, key, NO_GAP, true), 0);

        // an upstream error before the first byte: released, its record lost too
        const failed = await post(gw, key.secret, {
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi mock:status=500" }],
        });
        assert.equal(failed.status, 502);
        await assertBooks(gw, key, NO_GAP, true);

        // an upstream drop mid-stream: the upstream's error event; unrecorded, so not charged
        const dropMessages: Message[] = [{ role: "user", content: "hi mock:drop-after=4" }];
        const dropped = parseStream(
          (await post(gw, key.secret, { model: TEST_MODEL, stream: true, messages: dropMessages })).text,
        );
        assert.equal(dropped.done, false);
        assert.equal(dropped.events.at(-1).error?.code, "upstream_error");
        assert.equal(await assertBooks(gw, key, NO_GAP, true), 0);
      } finally {
        await outage.end();
        await outage.close();
      }
      // the store is back: the next call is recorded and charged normally
      assert.equal((await gw.recorded("key_id", key.keyId)).calls, 0, "no record got through");
      await assertKeyStillWorks(gw, key, NO_GAP);
      assert.equal((await gw.recorded("key_id", key.keyId)).calls, 1);
    });

    it("30 calls mixing every failure on 3 keys, then 30 more during a store outage: books exact per key and account", async () => {
      upstream.reset();
      const shared = await gw.account(`exactly-once-${store}-mixed-a`);
      const keys = [await freshKey(shared), await freshKey(shared), await freshKey()];
      const accounts = [...new Set(keys.map((k) => k.accountId))];

      type Outcome = (reply: Reply | undefined, outage: boolean) => void;
      interface Kind {
        model: string;
        stream: boolean;
        directives: string;
        includeUsage?: boolean;
        abort?: "before-answer" | "mid-stream";
        /** the tokens the call must be charged, from its messages */
        charge(messages: Message[]): number;
        check: Outcome;
      }
      const envelope =
        (status: number, code: string): Outcome =>
        (reply) => {
          assert.equal(reply?.status, status, reply?.text);
          assert.equal(JSON.parse(reply!.text).error.code, code);
        };
      const completes: Outcome = (reply, outage) => {
        if (outage) return envelope(503, "store_unavailable")(reply, outage);
        assert.equal(reply?.status, 200, reply?.text);
      };
      const streamEnds =
        (code: string | undefined): Outcome =>
        (reply, outage) => {
          const s = parseStream(reply!.text);
          const expected = code ?? (outage ? "store_unavailable" : undefined);
          assert.equal(s.done, expected === undefined, "[DONE] only for a complete, recorded call");
          if (expected) assert.equal(s.events.at(-1).error?.code, expected);
        };
      const L = (m: Message[]) => countPromptTokens(m);
      const W = (m: Message[]) => mockPromptTokens(m);
      const kinds: Kind[] = [
        {
          model: TEST_MODEL,
          stream: false,
          directives: "mock:tokens=5",
          charge: (m) => W(m) + 5,
          check: completes,
        },
        {
          model: TEST_MODEL,
          stream: true,
          includeUsage: true,
          directives: "mock:tokens=5",
          charge: (m) => W(m) + 5,
          check: streamEnds(undefined),
        },
        {
          model: TEST_MODEL,
          stream: true,
          directives: "mock:tokens=5 mock:no-usage",
          charge: (m) => L(m) + 5,
          check: streamEnds(undefined),
        },
        {
          model: TEST_MODEL,
          stream: false,
          directives: "mock:status=500",
          charge: () => 0,
          check: envelope(502, "upstream_error"),
        },
        {
          model: TEST_MODEL,
          stream: true,
          directives: "mock:status=429 mock:retry-after=0",
          charge: () => 0,
          check: envelope(429, "upstream_rate_limited"),
        },
        {
          model: TEST_MODEL,
          stream: false,
          directives: "mock:status=400",
          charge: () => 0,
          check: envelope(400, "upstream_bad_request"),
        },
        {
          model: TEST_MODEL,
          stream: true,
          directives: "mock:drop-after=4",
          charge: (m) => L(m) + 4,
          check: streamEnds("upstream_error"),
        },
        {
          model: TEST_MODEL,
          stream: false,
          directives: "mock:drop-after=1",
          charge: () => 0,
          check: envelope(502, "upstream_error"),
        },
        {
          model: STRICT_MODEL,
          stream: false,
          directives: "mock:hang",
          charge: () => 0,
          check: envelope(504, "upstream_timeout"),
        },
        {
          model: STRICT_MODEL,
          stream: true,
          directives: "mock:hang-after=3",
          charge: (m) => L(m) + 3,
          check: streamEnds("upstream_timeout"),
        },
        {
          model: TEST_MODEL,
          stream: false,
          directives: "mock:hang",
          abort: "before-answer",
          charge: (m) => L(m),
          check: () => undefined,
        },
        {
          model: TEST_MODEL,
          stream: true,
          directives: "mock:hang",
          abort: "before-answer",
          charge: (m) => L(m),
          check: () => undefined,
        },
        {
          model: TEST_MODEL,
          stream: true,
          directives: "mock:hang-after=1",
          abort: "mid-stream",
          charge: (m) => L(m) + 1,
          check: () => undefined,
        },
      ];

      /** Fires 30 calls at once; returns the charges each key and account must carry. */
      async function batch(name: string, outage: boolean) {
        const perKey = new Map<string, number>();
        const perAccount = new Map<string, number>();
        await Promise.all(
          Array.from({ length: 30 }, async (_, i) => {
            const kind = kinds[i % kinds.length]!;
            const key = keys[i % keys.length]!;
            const marker = `mark-${name}-${i}-end`;
            const messages: Message[] = [{ role: "user", content: `${marker} please ${kind.directives}` }];
            const body = {
              model: kind.model,
              stream: kind.stream,
              messages,
              ...(kind.includeUsage ? { stream_options: { include_usage: true } } : {}),
            };
            let reply: Reply | undefined;
            if (kind.abort === "before-answer")
              await abortBeforeAnswer(gw, upstream, key.secret, body, marker);
            else if (kind.abort === "mid-stream") await abortMidStream(gw, key.secret, body);
            else reply = await post(gw, key.secret, body);
            kind.check(reply, outage);
            // a call whose record cannot be committed failed through the gateway: not charged (#17)
            const charge = outage ? 0 : kind.charge(messages);
            perKey.set(key.keyId, (perKey.get(key.keyId) ?? 0) + charge);
            perAccount.set(key.accountId, (perAccount.get(key.accountId) ?? 0) + charge);
          }),
        );
        await until(() => gw.gateway.deps.ledger.openReservations() === 0, "every reservation is closed");
        return { perKey, perAccount };
      }

      // Batch 1: the store works; every call is recorded.
      const first = await batch("one", false);
      await until(
        async () =>
          (await Promise.all(keys.map((k) => gw.recorded("key_id", k.keyId)))).reduce(
            (s, r) => s + r.calls,
            0,
          ) === 30,
        "all 30 calls are recorded",
      );
      for (const key of keys) {
        assert.equal(
          (await gw.ledger("key", key.keyId))?.used,
          first.perKey.get(key.keyId),
          "ledger (key) = the calls' charges",
        );
        await assertBooks(gw, key);
      }
      for (const account of accounts)
        assert.equal(
          (await gw.ledger("account", account))?.used,
          first.perAccount.get(account),
          "ledger (account)",
        );

      // Batch 2: the same mix while no record can be committed.
      const storedBefore = await Promise.all(keys.map((k) => stored(gw, "api_keys", k.keyId)));
      const outage = await storeOutage(gw);
      let second: Awaited<ReturnType<typeof batch>>;
      try {
        await outage.begin();
        second = await batch("two", true);
        // records of calls whose client left are written after the client is gone: let
        // every queued write fail before the table comes back
        await gw.gateway.deps.records.flush();
      } finally {
        await outage.end();
        await outage.close();
      }
      const gapOf = (key: Key): Gap => ({
        key: second.perKey.get(key.keyId)!,
        account: second.perAccount.get(key.accountId)!,
      });
      for (const [i, key] of keys.entries()) {
        assert.equal(
          await stored(gw, "api_keys", key.keyId),
          storedBefore[i],
          "nothing recorded in the outage",
        );
        const expected = first.perKey.get(key.keyId)! + second.perKey.get(key.keyId)!;
        assert.equal(
          (await gw.ledger("key", key.keyId))?.used,
          expected,
          "ledger (key) = every call's charge, once",
        );
        await assertBooks(gw, key, gapOf(key));
      }
      for (const account of accounts) {
        const expected = first.perAccount.get(account)! + second.perAccount.get(account)!;
        assert.equal(
          (await gw.ledger("account", account))?.used,
          expected,
          "ledger (account) = every call's charge, once",
        );
        assert.equal((await gw.ledger("account", account))?.reserved, 0);
      }
      assert.equal(
        (await Promise.all(keys.map((k) => gw.recorded("key_id", k.keyId)))).reduce((s, r) => s + r.calls, 0),
        30,
        "the outage's calls have no record",
      );
      for (const key of keys) await assertKeyStillWorks(gw, key, gapOf(key));
    });
  });

  describe(`exactly once at shutdown (${store})`, await storeSuite(store), () => {
    it("a slow stream and a slow answer in flight when close() begins complete, are recorded and settled", async () => {
      const upstream = await startMockUpstream({ chunkDelayMs: 30 });
      const gw = await startTestGateway({ upstream, store });
      let conn: SecondConnection | undefined;
      try {
        const accountId = await gw.account("shutdown");
        const { id: keyId, secret } = await gw.key(accountId);
        const streamMessages: Message[] = [{ role: "user", content: "slow stream mock:tokens=20" }];
        const jsonMessages: Message[] = [
          { role: "user", content: "slow answer mock:latency=600 mock:tokens=20" },
        ];
        const streamRes = await request(gw, secret, {
          model: TEST_MODEL,
          stream: true,
          stream_options: { include_usage: true },
          messages: streamMessages,
        });
        assert.equal(streamRes.status, 200, "the stream has begun");
        const jsonRes = request(gw, secret, { model: TEST_MODEL, messages: jsonMessages });
        await until(() => upstream.inFlight() === 2, "both calls reach the upstream");

        const closing = gw.gateway.close();
        let closed = false;
        void closing.then(() => {
          closed = true;
        });

        const [streamText, json] = await Promise.all([
          streamRes.text(),
          jsonRes.then(async (r) => ({
            status: r.status,
            requestId: r.headers.get("x-request-id")!,
            text: await r.text(),
          })),
        ]);
        // right after both answers ended: nothing is held any more
        assert.equal(gw.gateway.deps.ledger.openReservations(), 0, "settled before the answers ended");
        const s = parseStream(streamText);
        assert.ok(s.done, "the stream ends with [DONE]");
        assert.equal(s.contents.length, 20);
        const streamUsage = s.events.at(-1).usage;
        assert.equal(json.status, 200, json.text);
        const jsonUsage = JSON.parse(json.text).usage;
        assert.equal(jsonUsage.completion_tokens, 20);
        assert.equal(streamUsage.completion_tokens, 20);

        await closing;
        assert.ok(closed);
        const total = streamUsage.total_tokens + jsonUsage.total_tokens;
        const { ledger } = gw.gateway.deps;
        assert.equal(ledger.openReservations(), 0);

        // the gateway's store is closed: read what it left with a connection of our own
        conn = await secondConnection(gw);
        assert.deepEqual(await ledgerAfterClose(gw, conn, "key", keyId), { used: total, reserved: 0 });
        assert.deepEqual(await ledgerAfterClose(gw, conn, "account", accountId), {
          used: total,
          reserved: 0,
        });
        const rows = await conn.all(
          "select request_id, status, http_status, stream, total_tokens from call_records where key_id = ? order by stream",
          [keyId],
        );
        assert.deepEqual(
          rows.map((r) => [r.status, Number(r.http_status), Number(r.stream), Number(r.total_tokens)]),
          [
            ["ok", 200, 0, jsonUsage.total_tokens],
            ["ok", 200, 1, streamUsage.total_tokens],
          ],
        );
        assert.equal(rows[0].request_id, json.requestId);
        assert.equal(rows[1].request_id, streamRes.headers.get("x-request-id"));
        const [key] = await conn.all("select used_tokens from api_keys where id = ?", [keyId]);
        const [account] = await conn.all("select used_tokens from accounts where id = ?", [accountId]);
        assert.equal(Number(key.used_tokens), total, "the key's counter = its records = the ledger");
        assert.equal(Number(account.used_tokens), total);
      } finally {
        await conn?.close();
        await gw.close();
        await upstream.close();
      }
    });

    // Known gateway fault (intermittent, seen on PostgreSQL): close() flushes the record writer
    // right after app.close(), but a call cut at the end of the grace period queues its record
    // only a loop turn later (the abort reaches the relay through undici's socket close), so
    // flush() finds nothing and the record races store.close(); when it loses, the record is
    // gone ("driver has already been destroyed") while the charge was settled in the ledger.
    it("calls still hanging when the grace period ends are cut, recorded and settled once before the store closes", async () => {
      const upstream = await startMockUpstream();
      const base = testConfig(upstream);
      const gw = await startTestGateway({
        upstream,
        store,
        config: { server: { ...base.server, shutdown_grace_ms: 300 } },
      });
      let conn: SecondConnection | undefined;
      try {
        const accountId = await gw.account("shutdown-grace");
        const { id: keyId, secret } = await gw.key(accountId);
        const streamMessages: Message[] = [{ role: "user", content: "stalls after two mock:hang-after=2" }];
        const jsonMessages: Message[] = [{ role: "user", content: "never answered mock:hang" }];
        const streamRes = await request(gw, secret, {
          model: TEST_MODEL,
          stream: true,
          messages: streamMessages,
        });
        const reader = streamRes.body!.getReader();
        const decoder = new TextDecoder();
        let text = "";
        while (!text.includes('"content":" world"')) {
          const { value, done } = await reader.read();
          assert.ok(!done);
          text += decoder.decode(value, { stream: true });
        }
        const rest = (async () => {
          for (;;) if ((await reader.read()).done) return "ended";
        })().catch(() => "cut");
        const jsonRes = request(gw, secret, { model: TEST_MODEL, messages: jsonMessages });
        jsonRes.catch(() => undefined);
        await until(() => upstream.inFlight() === 2, "both calls reach the upstream");

        await gw.gateway.close();
        await assert.rejects(jsonRes, "the hanging answer is cut");
        assert.equal(await rest, "cut", "the stalled stream is cut, without [DONE]");
        assert.ok(!text.includes("[DONE]"));

        const { ledger } = gw.gateway.deps;
        const charged = countPromptTokens(streamMessages) + 2 + countPromptTokens(jsonMessages);
        assert.equal(ledger.openReservations(), 0);
        conn = await secondConnection(gw);
        assert.deepEqual(
          await ledgerAfterClose(gw, conn, "key", keyId),
          { used: charged, reserved: 0 },
          "the prompts and 2 words, once",
        );

        const rows = await conn.all(
          "select stream, prompt_tokens, completion_tokens from call_records where key_id = ? order by stream",
          [keyId],
        );
        assert.deepEqual(
          rows.map((r) => [Number(r.stream), Number(r.prompt_tokens), Number(r.completion_tokens)]),
          [
            [0, countPromptTokens(jsonMessages), 0],
            [1, countPromptTokens(streamMessages), 2],
          ],
          "both cut calls are recorded before the store closed",
        );
        const [key] = await conn.all("select used_tokens from api_keys where id = ?", [keyId]);
        assert.equal(Number(key.used_tokens), charged, "the key's counter = its records = the ledger");
      } finally {
        await conn?.close();
        await gw.close();
        await upstream.close();
      }
    });
  });
}
