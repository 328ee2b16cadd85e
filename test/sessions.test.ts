// Agent sessions as records (issue #31): the session each client names, as the records, the
// console and the exports show it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { type KeySettings, updateKey } from "../src/accounts/keys.ts";
import { parseChatRequest } from "../src/domain/chat-request.ts";
import { nanosFor } from "../src/ledger/money.ts";
import { configuredPricing, costRule } from "../src/prices/pricing.ts";
import { DEFAULT_PROMPT_OVERHEADS, promptUpperBound } from "../src/providers/prompt-bound.ts";
import { RECORD_FIELDS } from "../src/records/queries.ts";
import type { AdminRecordView } from "../src/views/admin.ts";
import type { CallRecordView, KeyView, SessionView } from "../src/views/console.ts";
import { loadAgentFixture } from "./agents/fixtures.ts";
import { adminApiSuite, refused, suiteEnd } from "./support/admin-api.ts";
import {
  type ConsoleSession,
  pricedModels,
  startTestGateway,
  TEST_MODEL,
  TEST_PRICING,
  type TestGateway,
} from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";

/** Sends a recorded request as its client did, with the test's key and model. */
async function replay(
  gw: TestGateway,
  client: "claude-code" | "codex",
  name: string,
  secret: string,
  change: (headers: Record<string, string>, body: Record<string, unknown>) => void = () => {},
): Promise<{ status: number; requestId: string }> {
  const fixture = loadAgentFixture(client, name);
  const headers = { ...fixture.headers, authorization: `Bearer ${secret}` };
  const body = { ...fixture.body, model: TEST_MODEL } as Record<string, unknown>;
  change(headers, body);
  const res = await fetch(`${gw.origin}${fixture.path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return { status: res.status, requestId: res.headers.get("x-request-id")! };
}

describe("the session a call belongs to", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let secret: string;
  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({ upstream });
    secret = (await gw.key(await gw.account("sessions"))).secret;
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  test("Claude Code's recorded requests carry its session id", async () => {
    for (const name of ["default-json.turn-1", "named-stream-json.turn-2"]) {
      const fixture = loadAgentFixture("claude-code", name);
      const { status, requestId } = await replay(gw, "claude-code", name, secret);
      assert.equal(status, 200, name);
      const record = await gw.record(requestId);
      assert.equal(record.session_id, fixture.headers["x-claude-code-session-id"]);
      assert.equal(record.session_client, "claude-code");
      assert.equal(record.api, "messages");
    }
  });

  test("without its header, Claude Code's session is read from metadata.user_id", async () => {
    const fixture = loadAgentFixture("claude-code", "default-json.turn-1");
    const { requestId } = await replay(gw, "claude-code", "default-json.turn-1", secret, (h) => {
      delete h["x-claude-code-session-id"];
    });
    const record = await gw.record(requestId);
    assert.equal(record.session_id, JSON.parse(fixture.body.metadata.user_id).session_id);
    assert.equal(record.session_client, "claude-code");
  });

  test("Codex's recorded requests carry its thread", async () => {
    for (const name of ["default-text.turn-1", "named-json.turn-2"]) {
      const fixture = loadAgentFixture("codex", name);
      const { status, requestId } = await replay(gw, "codex", name, secret);
      assert.equal(status, 200, name);
      const record = await gw.record(requestId);
      assert.equal(record.session_id, fixture.headers["session-id"]);
      assert.equal(record.session_id, fixture.body.prompt_cache_key);
      assert.equal(record.session_client, "codex");
      assert.equal(record.api, "responses");
    }
  });

  test("without its header, Codex's thread is its prompt_cache_key; another client's cache key is none", async () => {
    const fixture = loadAgentFixture("codex", "default-text.turn-1");
    const codex = await replay(gw, "codex", "default-text.turn-1", secret, (h) => {
      delete h["session-id"];
    });
    assert.equal((await gw.record(codex.requestId)).session_id, fixture.body.prompt_cache_key);
    const other = await replay(gw, "codex", "default-text.turn-1", secret, (h) => {
      delete h["session-id"];
      delete h.originator;
    });
    assert.equal((await gw.record(other.requestId)).session_id, null);
  });

  test("x-session-id through the OpenAI SDK, on any API, before what an agent names", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
    const { response, data } = await client.chat.completions
      .create(
        { model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] },
        { headers: { "x-session-id": "nightly-run-42" } },
      )
      .withResponse();
    assert.ok(data.choices[0]);
    const record = await gw.record(response.headers.get("x-request-id")!);
    assert.equal(record.session_id, "nightly-run-42");
    assert.equal(record.session_client, "header");
    assert.equal(record.api, "chat.completions");

    const codex = await replay(gw, "codex", "default-text.turn-1", secret, (h) => {
      h["x-session-id"] = "my-own";
    });
    assert.equal((await gw.record(codex.requestId)).session_id, "my-own");
  });

  test("a malformed session id is passed over, and the call goes on", async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
    for (const bad of ["x".repeat(129), "two words", "-leading", "a/b"]) {
      const { response } = await client.chat.completions
        .create(
          { model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] },
          { headers: { "x-session-id": bad } },
        )
        .withResponse();
      assert.equal((await gw.record(response.headers.get("x-request-id")!)).session_id, null, bad);
    }
    // the next source still counts
    const fixture = loadAgentFixture("claude-code", "default-json.turn-1");
    const { requestId } = await replay(gw, "claude-code", "default-json.turn-1", secret, (h) => {
      h["x-session-id"] = "bad id";
    });
    assert.equal((await gw.record(requestId)).session_id, fixture.headers["x-claude-code-session-id"]);
  });

  test("a session's cap is refused in each API's own envelope, naming the cap and the session", async () => {
    const account = await gw.account("envelopes");
    const key = await gw.key(account);
    // below the least any of these agents' calls holds: their first call is refused
    await updateKey(gw.gateway.deps.store.db, key.id, { session_limit_tokens: 1_000 });

    const claude = loadAgentFixture("claude-code", "default-stream-json.turn-1");
    const res = await fetch(`${gw.origin}${claude.path}`, {
      method: "POST",
      headers: { ...claude.headers, authorization: `Bearer ${key.secret}` },
      body: JSON.stringify({ ...claude.body, model: TEST_MODEL }),
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("x-should-retry"), "false", "Anthropic's SDK does not retry it");
    const anthropic = (await res.json()) as {
      type: string;
      error: { type: string; message: string; details: any };
    };
    assert.equal(anthropic.type, "error");
    assert.equal(anthropic.error.type, "rate_limit_error");
    assert.equal(anthropic.error.details.error_code, "session_limit_exceeded");
    assert.match(
      anthropic.error.message,
      new RegExp(
        `per-session limit of 1000 tokens cannot cover this request in session '${claude.headers["x-claude-code-session-id"]}'`,
      ),
    );
    const record = await gw.record(res.headers.get("x-request-id")!);
    assert.deepEqual(
      [record.error_code, record.session_id],
      ["session_limit_exceeded", claude.headers["x-claude-code-session-id"]],
    );

    const codex = loadAgentFixture("codex", "default-json.turn-1");
    const answer = await fetch(`${gw.origin}${codex.path}`, {
      method: "POST",
      headers: { ...codex.headers, authorization: `Bearer ${key.secret}` },
      body: JSON.stringify({ ...codex.body, model: TEST_MODEL }),
    });
    assert.equal(answer.status, 429);
    const openai = (await answer.json()) as { error: { type: string; code: string; message: string } };
    assert.equal(openai.error.code, "session_limit_exceeded");
    assert.equal(openai.error.type, "insufficient_quota");
    assert.match(openai.error.message, new RegExp(`in session '${codex.headers["session-id"]}'`));

    // through the OpenAI SDK on chat completions: its typed error, not retried
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: key.secret });
    await assert.rejects(
      client.chat.completions.create(
        { model: TEST_MODEL, messages: [{ role: "user", content: "x ".repeat(2_000) }] },
        { headers: { "x-session-id": "sdk-run" } },
      ),
      (err: unknown) =>
        err instanceof OpenAI.RateLimitError &&
        err.code === "session_limit_exceeded" &&
        /session 'sdk-run'/.test(err.message),
    );
  });

  test("a call refused before its body is read still carries the headers' session", async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${secret}`,
        "content-type": "application/json",
        "x-session-id": "s-1",
      },
      body: "{not json",
    });
    assert.equal(res.status, 400);
    const record = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(record.session_id, "s-1");
  });
});

const MAX_TOKENS = 40;

/** A request of the cap suites: what it says, and what the gateway holds for it in tokens and money. */
function shape(latencyMs: number) {
  const content = `count to forty please mock:tokens=${MAX_TOKENS} mock:latency=${latencyMs}`;
  const messages = [{ role: "user" as const, content }];
  const prompt = promptUpperBound(
    parseChatRequest({ model: TEST_MODEL, messages, max_tokens: MAX_TOKENS }),
    DEFAULT_PROMPT_OVERHEADS,
  );
  const hold = prompt + MAX_TOKENS;
  const rule = { ...costRule(prompt, configuredPricing(TEST_PRICING)), promptTokens: prompt };
  return { messages, hold, holdNanos: nanosFor(rule, hold), minimum: prompt + 16 };
}
/** answered at once */
const QUICK = shape(0);
/**
 * answered only once every concurrent call was decided: a call that settles early (charged
 * less than it held) would rightly free room for a latecomer
 */
const SLOW = shape(1_500);

/** One call of `session` (none: no x-session-id); its status and error. */
async function fire(
  gw: TestGateway,
  secret: string,
  session: string | undefined,
  request = QUICK,
): Promise<{ status: number; code?: string; message?: string }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
      ...(session ? { "x-session-id": session } : {}),
    },
    body: JSON.stringify({ model: TEST_MODEL, messages: request.messages, max_tokens: MAX_TOKENS }),
  });
  const body = (await res.json()) as { error?: { code: string; message: string } };
  return { status: res.status, code: body.error?.code, message: body.error?.message };
}

/** What the store's records of a key's session add up to. */
async function sessionRecords(gw: TestGateway, keyId: string, session: string) {
  const row = await gw.gateway.deps.store.db
    .selectFrom("call_records")
    .select((eb) => [
      eb.fn.sum<number>("total_tokens").as("tokens"),
      eb.fn.sum<number>("cost_nanos").as("nanos"),
      eb.fn.countAll<number>().as("calls"),
    ])
    .where("key_id", "=", keyId)
    .where("session_id", "=", session)
    .executeTakeFirstOrThrow();
  return { tokens: Number(row.tokens ?? 0), nanos: Number(row.nanos ?? 0), calls: Number(row.calls) };
}

for (const store of ["sqlite", "postgres", "postgres+redis"] as const) {
  describe(`a key's per-session caps (${store})`, await storeSuite(store), () => {
    let upstream: MockUpstream;
    let gw: TestGateway;
    before(async () => {
      upstream = await startMockUpstream();
      gw = await startTestGateway({
        upstream,
        store,
        config: { ledger: { wait_ms: 0 }, models: pricedModels(upstream) },
      });
    });
    after(async () => {
      await gw.close();
      await upstream.close();
    });

    async function cappedKey(name: string, caps: KeySettings) {
      const account = await gw.account(`${name}-${store}`);
      const key = await gw.key(account);
      await updateKey(gw.gateway.deps.store.db, key.id, caps);
      return key;
    }

    test("a session under a token cap is refused, naming the cap, once used up; another session of the key is not", async (t) => {
      const key = await cappedKey("token-cap", { session_limit_tokens: QUICK.hold * 3 });
      const outcomes: number[] = [];
      let refused: Awaited<ReturnType<typeof fire>> | undefined;
      for (let i = 0; i < 10 && !refused; i++) {
        const r = await fire(gw, key.secret, "run-a");
        if (r.status === 200) outcomes.push(r.status);
        else refused = r;
      }
      assert.ok(refused, "the session is stopped");
      assert.equal(refused.status, 429);
      assert.equal(refused.code, "session_limit_exceeded");
      assert.match(refused.message!, new RegExp(`per-session limit of ${QUICK.hold * 3} tokens`));
      assert.match(refused.message!, /session 'run-a'/);
      const used = await sessionRecords(gw, key.id, "run-a");
      assert.ok(used.tokens <= QUICK.hold * 3, `the session used ${used.tokens} of its ${QUICK.hold * 3}`);
      t.diagnostic(
        `token cap ${QUICK.hold * 3}: ${outcomes.length} calls answered, ${used.tokens} tokens used`,
      );
      // the key goes on: another session, and calls naming none
      assert.equal((await fire(gw, key.secret, "run-b")).status, 200);
      assert.equal((await fire(gw, key.secret, undefined)).status, 200);
      assert.equal((await fire(gw, key.secret, "run-a")).code, "session_limit_exceeded");
    });

    test("a session under a money cap is refused with session_budget_exceeded, naming the cap", async () => {
      const key = await cappedKey("money-cap", { session_budget_nanos: QUICK.holdNanos * 2 });
      let refused: Awaited<ReturnType<typeof fire>> | undefined;
      for (let i = 0; i < 10 && !refused; i++) {
        const r = await fire(gw, key.secret, "run-m");
        if (r.status !== 200) refused = r;
      }
      assert.equal(refused?.code, "session_budget_exceeded");
      assert.match(refused!.message!, /per-session budget of \$/);
      const used = await sessionRecords(gw, key.id, "run-m");
      assert.ok(
        used.nanos > 0 && used.nanos <= QUICK.holdNanos * 2,
        `spent ${used.nanos} of ${QUICK.holdNanos * 2}`,
      );
      assert.equal((await fire(gw, key.secret, "run-n")).status, 200);
    });

    /** The ledger's book of a capped session, and the store's row of it on PostgreSQL. */
    async function books(keyId: string, session: string) {
      const ledger = await gw.gateway.deps.ledger.inspectSession?.(keyId, session);
      const stored =
        store === "sqlite"
          ? undefined
          : await gw.gateway.deps.store.db
              .selectFrom("session_usage")
              .selectAll()
              .where("key_id", "=", keyId)
              .where("session_id", "=", session)
              .executeTakeFirst();
      return { ledger, stored };
    }

    for (const kind of ["tokens", "money"] as const)
      test(`20 concurrent calls of one session against a ${kind} cap that fits 5: 5 answered, never beyond the cap`, async (t) => {
        upstream.reset();
        const cap = kind === "tokens" ? SLOW.hold * 5 : SLOW.holdNanos * 5;
        const caps: KeySettings =
          kind === "tokens" ? { session_limit_tokens: cap } : { session_budget_nanos: cap };
        const key = await cappedKey(`concurrent-${kind}`, caps);
        const started = performance.now();
        const results = await Promise.all(
          Array.from({ length: 20 }, () => fire(gw, key.secret, "swarm", SLOW)),
        );
        const ms = Math.round(performance.now() - started);
        const ok = results.filter((r) => r.status === 200).length;
        assert.equal(
          upstream.requests.length,
          ok,
          "every 200 is one upstream call and nothing else got through",
        );
        assert.equal(ok, 5);
        assert.equal(results.filter((r) => r.status === 429).length, 15);
        const used = await sessionRecords(gw, key.id, "swarm");
        assert.equal(used.calls, 20, "refused calls are recorded too, in their session");
        assert.ok((kind === "tokens" ? used.tokens : used.nanos) <= cap, `used within ${cap}`);
        const { ledger, stored } = await books(key.id, "swarm");
        assert.ok(ledger, "the ledger keeps the capped session");
        assert.deepEqual(
          {
            used: ledger.used,
            spent: ledger.spentNanos,
            reserved: ledger.reserved,
            reservedNanos: ledger.reservedNanos,
          },
          { used: used.tokens, spent: used.nanos, reserved: 0, reservedNanos: 0 },
          "the session's ledger adds up to its records, nothing held",
        );
        if (stored)
          assert.deepEqual(
            [stored.used_tokens, stored.spent_nanos, stored.reserved_tokens, stored.reserved_nanos].map(
              Number,
            ),
            [used.tokens, used.nanos, 0, 0],
            "the store's row of the session adds up to its records",
          );
        assert.equal(gw.gateway.deps.ledger.openReservations(), 0);
        const codes = [...new Set(results.flatMap((r) => (r.code ? [r.code] : [])))];
        t.diagnostic(
          `${store}, ${kind} cap ${cap} (5 holds of ${kind === "tokens" ? SLOW.hold : SLOW.holdNanos}), no waiting: ` +
            `20 at once -> ${ok} answered, ${20 - ok} refused (${codes.join(", ")}); ` +
            `used ${used.tokens} tokens, ${used.nanos} nanodollars; ${ms} ms`,
        );
        // the next session of the key starts afresh
        assert.equal((await fire(gw, key.secret, "swarm-2")).status, 200);
      });

    test("20 concurrent calls of one session that wait for each other's holds: as many answered as the cap covers, never beyond it", async (t) => {
      // the ledger's default wait: a call the session's calls in flight keep out waits for them
      const waiting = await startTestGateway({ upstream, store, config: { models: pricedModels(upstream) } });
      try {
        upstream.reset();
        const account = await waiting.account(`waiting-${store}`);
        const key = await waiting.key(account);
        const cap = SLOW.hold * 5;
        await updateKey(waiting.gateway.deps.store.db, key.id, { session_limit_tokens: cap });
        const turn = shape(300);
        const started = performance.now();
        const results = await Promise.all(
          Array.from({ length: 20 }, () => fire(waiting, key.secret, "queue", turn)),
        );
        const ms = Math.round(performance.now() - started);
        const ok = results.filter((r) => r.status === 200).length;
        const used = await sessionRecords(waiting, key.id, "queue");
        assert.ok(used.tokens <= cap, `used ${used.tokens} of ${cap}`);
        assert.equal(upstream.requests.length, ok);
        const codes = results.flatMap((r) => (r.code ? [r.code] : []));
        assert.ok(
          codes.every((c) => c === "session_limit_exceeded" || c === "tokens_held"),
          codes.join(),
        );
        // what is left once the answered calls settled is below one more call's minimum
        assert.ok(cap - used.tokens < turn.minimum, `${cap - used.tokens} left, below ${turn.minimum}`);
        const count = (c: string) => codes.filter((x) => x === c).length;
        t.diagnostic(
          `${store}, token cap ${cap}, waiting up to 5 s: 20 at once -> ${ok} answered (each held at most ${turn.hold}, charged ${(used.tokens / Math.max(1, ok)).toFixed(1)} on average), ` +
            `${count("session_limit_exceeded")} session_limit_exceeded, ${count("tokens_held")} tokens_held; ` +
            `used ${used.tokens} of ${cap}; ${ms} ms`,
        );
      } finally {
        await waiting.close();
      }
    });

    test("a call without a session, or of a key without caps, holds nothing for a session", async () => {
      const capped = await cappedKey("no-session", { session_limit_tokens: QUICK.hold * 2 });
      assert.equal((await fire(gw, capped.secret, undefined)).status, 200);
      const plain = await gw.key(await gw.account(`plain-${store}`));
      assert.equal((await fire(gw, plain.secret, "free-run")).status, 200);
      assert.equal(await gw.gateway.deps.ledger.inspectSession?.(plain.id, "free-run"), undefined);
    });
  });
}

for (const store of ["sqlite", "postgres"] as const) {
  describe(
    `an account's sessions in the console and the admin API (${store})`,
    await storeSuite(store),
    () => {
      const admin = adminApiSuite(store);
      let owner: ConsoleSession;
      let outsider: ConsoleSession;
      let second: { id: string; secret: string };
      /** request ids by session, in the order they were made */
      const calls: Record<string, string[]> = {};
      const made = (session: string, requestId: string) => {
        calls[session] = [...(calls[session] ?? []), requestId];
      };
      let claude: string;
      let codex: string;

      const get = async (path: string, cookie: string) => {
        const res = await fetch(`${admin.gw.origin}/api/console${path}`, { headers: { cookie } });
        const text = await res.text();
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {}
        return { status: res.status, headers: res.headers, body, text };
      };

      before(async () => {
        const gw = admin.gw;
        owner = await gw.consoleUser(admin.acme, { role: "owner" });
        outsider = await gw.consoleUser(admin.other, { role: "owner" });
        second = await gw.key(admin.acme, { name: "app-two" });
        const client = new OpenAI({ baseURL: gw.baseURL, apiKey: admin.key.secret, maxRetries: 0 });
        const say = async (session: string | undefined, secret = admin.key.secret, model = TEST_MODEL) => {
          const c =
            secret === admin.key.secret ? client : new OpenAI({ baseURL: gw.baseURL, apiKey: secret });
          const { response } = await c.chat.completions
            .create(
              { model, messages: [{ role: "user", content: "hello there" }] },
              session ? { headers: { "x-session-id": session } } : {},
            )
            .withResponse();
          if (session) made(session, response.headers.get("x-request-id")!);
          await new Promise((r) => setTimeout(r, 3)); // distinct times: the order is the order made
        };
        await say("nightly-1");
        await say("nightly-1", admin.key.secret, "demo");
        await say(undefined);
        claude = loadAgentFixture("claude-code", "default-json.turn-1").headers["x-claude-code-session-id"]!;
        made(claude, (await replay(gw, "claude-code", "default-json.turn-1", admin.key.secret)).requestId);
        await new Promise((r) => setTimeout(r, 3));
        await say("nightly-1", second.secret);
        codex = loadAgentFixture("codex", "default-text.turn-1").headers["session-id"]!;
        made(codex, (await replay(gw, "codex", "default-text.turn-1", admin.key.secret)).requestId);
        // another account's session of the same name is its own
        const stranger = await gw.key(admin.other);
        await say("nightly-1", stranger.secret);
      });

      test("the list: each session summed from its records, the latest call first", async () => {
        const res = await get("/sessions", owner.cookie);
        assert.equal(res.status, 200, res.text);
        const sessions = res.body.data as SessionView[];
        assert.deepEqual(
          sessions.map((s) => s.session_id),
          [codex, "nightly-1", claude],
        );
        assert.equal(res.body.next_before, null);
        const nightly = sessions[1]!;
        const records = await Promise.all(calls["nightly-1"]!.slice(0, 3).map((id) => admin.gw.record(id)));
        assert.equal(nightly.calls, 3, "this account's calls of it only");
        assert.equal(nightly.client, "header");
        assert.equal(nightly.first_at, records[0]!.created_at);
        assert.equal(nightly.last_at, records[2]!.created_at);
        assert.equal(
          nightly.total_tokens,
          records.reduce((n, r) => n + r.total_tokens, 0),
        );
        assert.equal(
          nightly.cost_nanos,
          records.reduce((n, r) => n + r.cost_nanos, 0),
        );
        assert.ok(nightly.cost_nanos > 0);
        assert.equal(nightly.errors, 0);
        assert.deepEqual(nightly.models, ["demo", TEST_MODEL].sort());
        assert.deepEqual(nightly.apis, ["chat.completions"]);
        assert.deepEqual(nightly.keys.map((k) => k.name).sort(), ["app-one", "app-two"]);
        assert.deepEqual(
          [sessions[0]!.client, sessions[0]!.apis, sessions[2]!.client, sessions[2]!.apis],
          ["codex", ["responses"], "claude-code", ["messages"]],
        );
      });

      test("pages cover the list exactly once; a key narrows it", async () => {
        const seen: string[] = [];
        let before: string | null = null;
        do {
          const res = await get(
            `/sessions?limit=1${before ? `&before=${encodeURIComponent(before)}` : ""}`,
            owner.cookie,
          );
          assert.equal(res.status, 200, res.text);
          seen.push(...res.body.data.map((s: SessionView) => s.session_id));
          before = res.body.next_before;
        } while (before);
        assert.deepEqual(seen, [codex, "nightly-1", claude]);
        const narrowed = await get(`/sessions?key=${second.id}`, owner.cookie);
        assert.deepEqual(
          narrowed.body.data.map((s: SessionView) => [s.session_id, s.calls]),
          [["nightly-1", 3]],
          "a session with a call through the key, summed whole",
        );
        const bad = await get("/sessions?before=nonsense", owner.cookie);
        assert.equal(bad.status, 400);
      });

      test("a session opens as its calls in the order they were made, in pages, and exports them", async () => {
        const res = await get("/sessions/nightly-1", owner.cookie);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.session.calls, 3);
        assert.deepEqual(
          res.body.data.map((r: CallRecordView) => r.request_id),
          calls["nightly-1"]!.slice(0, 3),
        );
        assert.ok(
          res.body.data.every(
            (r: CallRecordView) => r.session_id === "nightly-1" && r.session_client === "header",
          ),
        );
        const first = await get("/sessions/nightly-1?limit=2", owner.cookie);
        const rest = await get(`/sessions/nightly-1?limit=2&after=${first.body.next_after}`, owner.cookie);
        assert.deepEqual(
          [...first.body.data, ...rest.body.data].map((r: CallRecordView) => r.request_id),
          calls["nightly-1"]!.slice(0, 3),
        );
        assert.equal(rest.body.next_after, null);
        const encoded = await get(`/sessions/${encodeURIComponent(claude)}`, owner.cookie);
        assert.equal(encoded.body.data[0].api, "messages");

        const csv = await get("/sessions/nightly-1/export", owner.cookie);
        assert.equal(csv.status, 200);
        assert.match(csv.headers.get("content-disposition")!, /filename="session-nightly-1\.csv"/);
        const lines = csv.text.trim().split("\r\n");
        assert.equal(lines[0], RECORD_FIELDS.join(","));
        assert.ok(lines[0]!.endsWith(",api,session_id,session_client"));
        assert.equal(lines.length, 4);
        assert.ok(lines.slice(1).every((l) => l.endsWith(",nightly-1,header")));
        const jsonl = await get("/sessions/nightly-1/export?format=jsonl", owner.cookie);
        assert.deepEqual(
          jsonl.text
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l).request_id),
          calls["nightly-1"]!.slice(0, 3),
        );
        // the records' own export carries the sessions too
        const today = await get("/records/export?format=jsonl", owner.cookie);
        const exported = today.text
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        assert.deepEqual(
          exported.filter((r) => r.session_id === claude).map((r) => r.session_client),
          ["claude-code"],
        );
      });

      test("another account's session is not found, as one that does not exist; an admin names the account", async () => {
        assert.equal(
          (await get("/sessions/nightly-1", outsider.cookie)).body.session.calls,
          1,
          "its own, of one call",
        );
        assert.equal((await get(`/sessions/${encodeURIComponent(claude)}`, outsider.cookie)).status, 404);
        assert.equal((await get("/sessions/no-such-run", owner.cookie)).status, 404);
        assert.equal((await get("/sessions/bad%20id", owner.cookie)).status, 404);
        assert.equal((await get(`/sessions?account=${admin.acme}`, outsider.cookie)).status, 404);
        const asAdmin = await get(`/sessions?account=${admin.acme}`, admin.admin.cookie);
        assert.equal(asAdmin.body.data.length, 3);
      });

      test("the admin API: an account's sessions, and a session's records", async () => {
        const res = await admin.call("GET", `/sessions?account=${admin.acme}&limit=2`);
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(
          res.body.data.map((s: SessionView) => s.session_id),
          [codex, "nightly-1"],
        );
        assert.equal(res.body.has_more, true);
        const next = await admin.call(
          "GET",
          `/sessions?account=${admin.acme}&cursor=${encodeURIComponent(res.body.next_cursor)}`,
        );
        assert.deepEqual(
          next.body.data.map((s: SessionView) => s.session_id),
          [claude],
        );
        const records = await admin.call("GET", `/records?account=${admin.acme}&session=nightly-1`);
        assert.deepEqual(
          records.body.data.map((r: AdminRecordView) => r.request_id),
          calls["nightly-1"]!.slice(0, 3).reverse(),
        );
        refused(await admin.call("GET", "/sessions"), 400, "invalid_request", "account");
      });

      test("the caps are set on keys through the console and the admin API", async () => {
        const patched = await fetch(`${admin.gw.origin}/api/console/keys/${second.id}`, {
          method: "PATCH",
          headers: { cookie: owner.cookie, origin: admin.gw.origin, "content-type": "application/json" },
          body: JSON.stringify({ session_limit_tokens: 200_000, session_budget_nanos: 2_000_000_000 }),
        });
        assert.equal(patched.status, 200);
        const key = ((await patched.json()) as { key: KeyView }).key;
        assert.deepEqual([key.session_limit_tokens, key.session_budget_nanos], [200_000, 2_000_000_000]);
        const zero = await fetch(`${admin.gw.origin}/api/console/keys/${second.id}`, {
          method: "PATCH",
          headers: { cookie: owner.cookie, origin: admin.gw.origin, "content-type": "application/json" },
          body: JSON.stringify({ session_limit_tokens: 0 }),
        });
        assert.equal(zero.status, 400, "a cap of nothing is no cap: refused");

        const created = await admin.call("POST", "/keys", {
          body: { account_id: admin.acme, name: "capped", session_limit_tokens: 50_000 },
        });
        assert.equal(created.status, 201, created.text);
        assert.deepEqual(
          [created.body.session_limit_tokens, created.body.session_budget_nanos],
          [50_000, null],
        );
        const changed = await admin.call("PATCH", `/keys/${created.body.id}`, {
          body: { session_limit_tokens: null, session_budget_nanos: 1_000_000 },
        });
        assert.deepEqual(
          [changed.body.session_limit_tokens, changed.body.session_budget_nanos],
          [null, 1_000_000],
        );
        const audit = await admin.call("GET", `/audit-log?resource=keys&resource_id=${created.body.id}`);
        assert.equal(
          audit.body.data[0].after.session_budget_nanos,
          1_000_000,
          "the audit log keeps the caps",
        );
      });

      suiteEnd(admin, { operations: ["listSessions", "listRecords", "createKey", "updateKey"] });
    },
  );
}
