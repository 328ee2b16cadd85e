// Issue: the accounting invariants hold under a concurrent mixed load. 200 requests at once
// (plain, streaming, upstream 500, upstream timeout, mid-stream drop, client hang-ups,
// over-limit, over-quota, failover to a second deployment) against several keys and accounts, on SQLite and on PostgreSQL,
// with chat completions alone, with about a third of them through the Responses API, and in
// one load of all three APIs at once (chat completions, Messages, Responses; on PostgreSQL
// with Redis too);
// afterwards, for every key and account, its records add up to its used counter, no
// reservation is open, and used stays within the quota and the limit.
// The mix is drawn from a seed, printed as a diagnostic; INVARIANT_SEED=N replays it.
import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import { after, before, describe, it } from "node:test";
import { sql } from "kysely";
import { Agent, fetch } from "undici";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import {
  FAILOVER_MODEL,
  INVARIANT_SUBJECTS,
  INVARIANT_UPSTREAM,
  loadConfig,
  loadTarget,
  type MixedLoadResult,
  NATIVE_MODEL,
  outcomeLabel,
  runMixedLoad,
  seedFrom,
  summarize,
} from "./support/mixed-load.ts";
import { startMockAnthropic } from "./support/mock-anthropic-upstream.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { needsRedis } from "./support/redis-instance.ts";

const REQUESTS = 200;
/** the share of the requests sent to POST /v1/responses */
const RESPONSES_SHARE = 0.3;
const SEED = seedFrom(process.env.INVARIANT_SEED);

/** Resolves with the promise, or fails the test after `ms`: no wait here is unbounded. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gave up after ${ms} ms waiting for: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// "+journal": the production default on SQLite and on PostgreSQL with Redis, records journaled
// and committed behind the answers (src/records/journal.ts, src/records/redis-journal.ts); the
// books are read after the writer's flush.
for (const variant of [
  "sqlite",
  "sqlite+journal",
  "postgres",
  "postgres+redis",
  "postgres+redis+journal",
] as const) {
  const store = variant.replace(/\+journal$/, "") as "sqlite" | "postgres" | "postgres+redis";
  describe(
    `accounting invariants under a mixed load (${variant})`,
    await (store === "postgres+redis" ? needsRedis() : storeSuite(store)),
    () => {
      let upstream: MockUpstream;
      let gw: TestGateway;
      let result: MixedLoadResult;

      before(async () => {
        upstream = await startMockUpstream(INVARIANT_UPSTREAM);
        const config = loadConfig(upstream, { smallPlanQuota: 500 });
        if (variant.endsWith("+journal")) config.store = { ...config.store, records_journal: true };
        gw = await startTestGateway({ upstream, store, config });
        result = await runMixedLoad(loadTarget(gw), {
          seed: SEED,
          requests: REQUESTS,
          concurrency: REQUESTS,
          ...INVARIANT_SUBJECTS,
          label: variant,
          responsesShare: RESPONSES_SHARE,
        });
      });
      after(async () => {
        await gw?.close();
        await upstream?.close();
      });

      it("holds every invariant for every key and account", (t) => {
        t.diagnostic(`seed ${SEED} (INVARIANT_SEED=${SEED} replays the mix)`);
        const { byLabel, byRecord } = summarize(result);
        t.diagnostic(`outcomes: ${JSON.stringify(Object.fromEntries(byLabel))}`);
        t.diagnostic(`records: ${JSON.stringify(Object.fromEntries(byRecord))}`);
        assert.deepEqual(result.report.violations, [], `seed ${SEED}: the books disagree`);
        assert.equal(result.report.openReservations, 0);
        assert.equal(result.report.records.length, REQUESTS, "every request has exactly one record");
        const ids = new Set(result.report.records.map((r) => r.request_id));
        assert.equal(ids.size, REQUESTS, "no request_id is recorded twice");
      });

      it("charged tokens add up per key and per account, and nothing was overspent", () => {
        const { keys, accounts } = result.report;
        assert.equal(keys.length, 12);
        assert.equal(accounts.length, 4);
        for (const f of [...keys, ...accounts]) {
          const who = `${f.kind} ${f.id}`;
          assert.equal(f.recorded, f.stored, `${who}: records add up to the used counter`);
          assert.equal(f.ledgerUsed, f.stored, `${who}: the ledger agrees with the store`);
          assert.equal(f.ledgerReserved, 0, `${who}: nothing is still reserved`);
          if (f.cap !== null) assert.ok(f.stored <= f.cap, `${who}: used ${f.stored} ≤ cap ${f.cap}`);
        }
        const byKeys = keys.reduce((sum, k) => sum + k.stored, 0);
        const byAccounts = accounts.reduce((sum, a) => sum + a.stored, 0);
        assert.equal(byKeys, byAccounts, "the keys' counters add up to the accounts' counters");
        assert.ok(byKeys > 0, "the load charged something");
        // The models are priced: the money books (checked record by record in the violations
        // above) are not trivially empty.
        const cost = result.report.records.reduce((sum, r) => sum + r.cost_nanos, 0);
        assert.ok(cost > 0 && Number.isInteger(cost), "the load cost something, in whole nanodollars");
        // Refusals happen only where a cap is small: a key limit for key_limit_exceeded, a
        // small account or plan quota for insufficient_quota.
        const limited = new Set(result.subjects.keys.filter((k) => k.limit !== null).map((k) => k.id));
        const smallQuota = new Set(
          accounts.filter((a) => a.cap !== null && a.cap < 1_000_000).map((a) => a.id),
        );
        let refusals = 0;
        for (const r of result.report.records) {
          if (r.error_code === "key_limit_exceeded") {
            refusals++;
            assert.ok(limited.has(r.key_id!), `${r.request_id}: key_limit_exceeded on a key without a limit`);
          }
          if (r.error_code === "insufficient_quota") {
            refusals++;
            assert.ok(
              smallQuota.has(r.account_id!),
              `${r.request_id}: insufficient_quota on an open account`,
            );
          }
        }
        assert.ok(refusals > 0, "the small caps refused something");
      });

      it("every kind of outcome actually happened", () => {
        const labels = result.outcomes.map(outcomeLabel);
        const records = result.report.records;
        const has = (label: string) => labels.includes(label);
        assert.ok(has("200"), "a plain JSON answer");
        assert.ok(has("200 stream [DONE]"), "a complete stream");
        assert.ok(has("502 upstream_error"), "a 502 (upstream 500 or a dropped connection)");
        assert.ok(has("504 upstream_timeout"), "a 504 (the upstream never answered)");
        assert.ok(has("200 stream upstream_timeout"), "a stream that stalled mid-way");
        assert.ok(has("200 stream upstream_error"), "a stream that dropped mid-way");
        assert.ok(has("429 key_limit_exceeded"), "a key over its limit");
        assert.ok(has("429 insufficient_quota"), "an account over its quota");
        assert.ok(has("aborted"), "a client that hung up before the answer");
        assert.ok(has("aborted after headers"), "a client that hung up mid-stream");
        assert.ok(
          records.some((r) => r.status === "client_disconnect" && r.stream === 0),
          "a client_disconnect record of a JSON call",
        );
        assert.ok(
          records.some((r) => r.status === "client_disconnect" && r.stream === 1 && r.completion_tokens > 0),
          "a client_disconnect record of a stream, with delivered tokens charged",
        );
        assert.ok(
          records.some((r) => r.status === "upstream_error" && r.http_status === 504),
          "an upstream_error record of a stall",
        );
        assert.ok(
          records.some((r) => r.status === "upstream_error" && r.http_status === 502),
          "an upstream_error record of a drop",
        );
        assert.ok(
          records.some((r) => r.usage_source === "estimated" && r.status === "ok"),
          "an answer without upstream usage, charged by estimate",
        );
        assert.ok(
          records.some((r) => r.usage_source === "upstream" && r.status === "ok"),
          "an answer charged by the upstream's usage",
        );
        // Failover: answered by the second deployment after the first failed; the failed
        // attempt is in the record, and only the answer is charged (the books above agree).
        const failedOver = records.filter((r) => {
          const attempts = r.attempts ? (JSON.parse(r.attempts) as { outcome: string }[]) : [];
          return r.status === "ok" && attempts.length === 2 && attempts[0]!.outcome === "server_error";
        });
        assert.ok(
          failedOver.some((r) => r.stream === 0),
          "a JSON call answered after a failover",
        );
        assert.ok(
          failedOver.some((r) => r.stream === 1),
          "a stream answered after a failover",
        );
        // The Responses API's calls ran the same paths, recorded as such.
        const responses = records.filter((r) => r.api === "responses");
        assert.ok(
          responses.some((r) => r.status === "ok" && r.stream === 0),
          "a Responses answer",
        );
        assert.ok(
          responses.some((r) => r.status === "ok" && r.stream === 1),
          "a Responses stream",
        );
        assert.ok(
          responses.some((r) => r.status === "upstream_error" || r.http_status >= 500),
          "a Responses call that failed upstream",
        );
        assert.ok(
          result.outcomes.some((o) => o.api === "responses" && o.stream && o.done && o.usageTotal !== null),
          "a Responses stream that completed with its usage",
        );
        const byRequest = new Map(result.outcomes.map((o) => [o.requestId, o]));
        for (const r of failedOver) {
          const told = byRequest.get(r.request_id)?.usageTotal;
          if (told != null)
            assert.equal(r.total_tokens, told, `${r.request_id}: charged what the client was told`);
        }
      });

      // The mix hangs up right as some requests arrive; when that lands while the auth hook
      // waits for the store (a key not cached yet: its first use, or any use after an admin
      // change cleared the cache), the request must still end with its record. The store is
      // held here so the hang-up lands in that window every time: on PostgreSQL by locking
      // api_keys (the lookup waits as it would on a slow store); on SQLite, whose synchronous
      // driver never yields mid-lookup in practice, by holding Kysely's single connection.
      it("a client that hangs up while its key is being looked up still gets its record", async () => {
        const account = await gw.account(`lookup-${store}`);
        const key = await gw.key(account);
        const { db, dialect } = gw.gateway.deps.store;
        const server = gw.gateway.app.server;
        const dispatcher = new Agent();

        let release = () => {};
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        let held = () => {};
        const isHeld = new Promise<void>((resolve) => {
          held = resolve;
        });
        const hold = db.transaction().execute(async (trx) => {
          if (dialect === "postgres") await sql`lock table api_keys in access exclusive mode`.execute(trx);
          held();
          await released;
        });
        let arrived = () => {};
        const hasArrived = new Promise<void>((resolve) => {
          arrived = resolve;
        });
        let closed = () => {};
        const hasClosed = new Promise<void>((resolve) => {
          closed = resolve;
        });
        const onRequest = (req: IncomingMessage, res: ServerResponse) => {
          if (req.headers["x-lookup-test"] !== "1") return;
          res.once("close", () => closed());
          arrived();
        };
        server.on("request", onRequest);
        const controller = new AbortController();
        try {
          await within(isHeld, 5_000, "the store to be held");
          const answer = fetch(`${gw.baseURL}/chat/completions`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${key.secret}`,
              "content-type": "application/json",
              "x-lookup-test": "1",
            },
            body: JSON.stringify({
              model: TEST_MODEL,
              max_tokens: 20,
              messages: [{ role: "user", content: "hello mock:tokens=5" }],
            }),
            signal: controller.signal,
            dispatcher,
          }).then(
            (res) => `HTTP ${res.status}`,
            (err: Error) => err.name,
          );
          await within(hasArrived, 5_000, "the request to reach the gateway");
          controller.abort();
          assert.equal(await within(answer, 5_000, "the client to give up"), "AbortError");
          await within(hasClosed, 5_000, "the gateway to see the hang-up");
        } finally {
          release();
          server.off("request", onRequest);
          await hold;
          await dispatcher.close();
        }

        const deps = gw.gateway.deps;
        let rows: { status: string; http_status: number; total_tokens: number }[] = [];
        for (let i = 0; i < 80 && !rows.length; i++) {
          await deps.records.flush();
          rows = await db
            .selectFrom("call_records")
            .select(["status", "http_status", "total_tokens"])
            .where("key_id", "=", key.id)
            .execute();
          if (!rows.length) await new Promise((r) => setTimeout(r, 25));
        }
        assert.equal(deps.ledger.openReservations(), 0, "no reservation is left open");
        // Without a record, the request vanished: Fastify waits for a body that never ends once
        // the socket is gone, so neither the chat handler nor the error handler ever runs.
        assert.equal(rows.length, 1, "the request reached the chat route, so it has exactly one record");
        assert.equal(rows[0]!.status, "client_disconnect");
        assert.equal(Number(rows[0]!.total_tokens), 0, "nothing was sent upstream, nothing is charged");
      });
    },
  );
}

// The same invariants over one load of all three client APIs at once, over the same keys and
// accounts: chat completions, Anthropic's Messages API (translated to the OpenAI mock, or
// natively to the Anthropic mock where it can play the kind) and OpenAI's Responses API. Every
// kind of request goes every way first (`everyWay`), then the rest is drawn: about a third
// Responses calls, of the others half Messages calls. On SQLite, on PostgreSQL, and on
// PostgreSQL with the ledger and rate limits in Redis.
for (const store of ["sqlite", "postgres", "postgres+redis"] as const) {
  describe(
    `accounting invariants under one mixed load of chat completions, messages and responses (${store})`,
    await storeSuite(store),
    () => {
      let upstream: MockUpstream;
      let anthropic: MockUpstream;
      let gw: TestGateway;
      let result: MixedLoadResult;

      before(async () => {
        upstream = await startMockUpstream(INVARIANT_UPSTREAM);
        anthropic = await startMockAnthropic(INVARIANT_UPSTREAM);
        gw = await startTestGateway({
          upstream,
          store,
          config: loadConfig(upstream, { smallPlanQuota: 500, anthropic }),
        });
        result = await runMixedLoad(loadTarget(gw), {
          seed: SEED,
          requests: REQUESTS,
          concurrency: REQUESTS,
          ...INVARIANT_SUBJECTS,
          label: `${store}-apis`,
          responsesShare: RESPONSES_SHARE,
          messagesShare: 0.5,
          native: true,
          everyWay: true,
        });
      });
      after(async () => {
        await gw?.close();
        await upstream?.close();
        await anthropic?.close();
      });

      it("records add up to the counters, nothing is reserved or overspent, one record per request", (t) => {
        t.diagnostic(`seed ${SEED} (INVARIANT_SEED=${SEED} replays the mix)`);
        const { byLabel, byRecord } = summarize(result);
        t.diagnostic(`outcomes: ${JSON.stringify(Object.fromEntries(byLabel))}`);
        t.diagnostic(`records: ${JSON.stringify(Object.fromEntries(byRecord))}`);
        assert.deepEqual(result.report.violations, [], `seed ${SEED}: the books disagree`);
        assert.equal(result.report.openReservations, 0);
        assert.equal(result.report.records.length, REQUESTS, "every request has exactly one record");
        assert.equal(new Set(result.report.records.map((r) => r.request_id)).size, REQUESTS);
        const { keys, accounts } = result.report;
        for (const f of [...keys, ...accounts]) {
          const who = `${f.kind} ${f.id}`;
          assert.equal(f.recorded, f.stored, `${who}: records add up to the used counter`);
          assert.equal(f.ledgerUsed, f.stored, `${who}: the ledger agrees with the store`);
          assert.equal(f.ledgerReserved, 0, `${who}: nothing is still reserved`);
          if (f.cap !== null) assert.ok(f.stored <= f.cap, `${who}: used ${f.stored} ≤ cap ${f.cap}`);
        }
        assert.equal(
          keys.reduce((sum, k) => sum + k.stored, 0),
          accounts.reduce((sum, a) => sum + a.stored, 0),
          "the keys' counters add up to the accounts' counters",
        );
        // the money books (checked record by record in the violations) are not trivially empty
        const cost = result.report.records.reduce((sum, r) => sum + r.cost_nanos, 0);
        assert.ok(cost > 0 && Number.isInteger(cost), "the load cost something, in whole nanodollars");
        // the caps were reached, so staying within them says something
        const capped = new Set(["key_limit_exceeded", "insufficient_quota", "tokens_held"]);
        assert.ok(
          result.report.records.some((r) => capped.has(r.error_code ?? "")),
          "the small caps refused something",
        );
      });

      it("every API answered, streamed and failed, and all three ran at once", async () => {
        const records = result.report.records;
        const rows = await gw.gateway.deps.store.db
          .selectFrom("call_records")
          .select(["request_id", "public_model"])
          .where(
            "request_id",
            "in",
            records.map((r) => r.request_id),
          )
          .execute();
        const modelOf = new Map(rows.map((r) => [r.request_id, r.public_model]));
        const has = (api: string, model: string | null, status: string, stream?: number) =>
          records.some(
            (r) =>
              r.api === api &&
              (model === null || modelOf.get(r.request_id) === model) &&
              r.status === status &&
              (stream === undefined || r.stream === stream),
          );
        for (const api of ["chat.completions", "messages", "responses"]) {
          assert.ok(has(api, TEST_MODEL, "ok", 0), `${api}: a whole answer`);
          assert.ok(has(api, TEST_MODEL, "ok", 1), `${api}: a stream`);
          assert.ok(has(api, FAILOVER_MODEL, "ok"), `${api}: an answer after a failover`);
          assert.ok(has(api, null, "upstream_error"), `${api}: a stream that broke mid-way`);
          assert.ok(has(api, null, "client_disconnect"), `${api}: a client that hung up`);
          assert.ok(has(api, null, "error"), `${api}: a call refused or failed`);
          assert.ok(
            records.some((r) => r.api === api && r.status === "ok" && r.usage_source === "estimated"),
            `${api}: an answer without upstream usage, charged by estimate`,
          );
        }
        assert.ok(has("messages", NATIVE_MODEL, "ok", 0), "messages natively: a whole answer");
        assert.ok(has("messages", NATIVE_MODEL, "ok", 1), "messages natively: a stream");
        assert.ok(has("messages", NATIVE_MODEL, "error"), "messages natively: a call that failed");
        // At once: some moment had a call of each API in flight.
        const spans = (api: string) =>
          records
            .filter((r) => r.api === api)
            .map((r) => [r.created_at, r.created_at + r.latency_ms] as const);
        const [chat, messages, responses] = ["chat.completions", "messages", "responses"].map(spans);
        const during = (at: number, of: readonly (readonly [number, number])[]) =>
          of.some(([from, to]) => from <= at && at <= to);
        assert.ok(
          responses!.some(([from]) => during(from, chat!) && during(from, messages!)),
          "a Responses call began while a chat completion and a Messages call were in flight",
        );
      });
    },
  );
}
