// The console API (docs/console-api.md) over real HTTP on loopback, on SQLite and PostgreSQL:
// every endpoint, who may call it (member, owner, admin, another account, logged out, wrong
// Origin, expired session), the cookie, the records views with calls made through /v1 and
// fabricated old rows, the export's CSV and JSON Lines, tickets, and keys changed in the
// console taking effect on /v1 at once.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import { updateAccount } from "../src/accounts/accounts.ts";
import { formatUsd } from "../src/prices/usd.ts";
import type { CallRecord } from "../src/records/call-record.ts";
import { DAY_MS, startOfUtcDay, utcDay } from "../src/records/days.ts";
import { RECORD_FIELDS } from "../src/records/queries.ts";
import { callRecord } from "./support/call-record.ts";
import {
  type ConsoleSession,
  type StoreKind,
  startTestGateway,
  TEST_MODEL,
  type TestGateway,
  testConfig,
} from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";

const STORES: StoreKind[] = (process.env.TEST_STORES ?? "sqlite,postgres")
  .split(",")
  .map((s) => s.trim())
  .filter((s): s is StoreKind => s === "sqlite" || s === "postgres");

interface Res {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * Lets the clock move on a millisecond or two, so rows made one after another get distinct
 * times and their newest-first order is the order they were made in (ties are broken by id).
 */
const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

/** the mock counts prompt tokens as whitespace-separated words */
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

/**
 * TEST_MODEL's prices in these tests, USD per million tokens: per token, 2,000 nanodollars of
 * fresh prompt, 500 of cache reads and 8,000 of output. demo stays unpriced.
 */
const PRICING = { input: 2, cached_input: 0.5, output: 8 };
/** A call's cost by hand, in nanodollars. */
const costOf = (prompt: number, completion: number, cached = 0) =>
  (prompt - cached) * 2_000 + cached * 500 + completion * 8_000;

/** Start of the next UTC month: when a monthly budget set now resets. */
function nextMonth(now = new Date()): number {
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
}

/** RFC 4180: quoted fields, doubled quotes, CRLF between records. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      row.push(cell);
      cell = "";
    } else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
      i++;
    } else cell += ch;
  }
  if (cell || row.length) rows.push([...row, cell]);
  return rows;
}

/** What a record's field looks like in a CSV cell, before quoting. */
function csvText(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

function fabricated(
  overrides: Partial<CallRecord> & Pick<CallRecord, "request_id" | "created_at">,
): CallRecord {
  return callRecord({
    public_model: TEST_MODEL,
    upstream_model: "mock-model",
    provider: "mock",
    params: '{"temperature":0.2}',
    prompt_tokens: 3,
    completion_tokens: 4,
    latency_ms: 9,
    ...overrides,
  });
}

for (const store of STORES) {
  describe(`console API (${store} store)`, await storeSuite(store), () => {
    let upstream: MockUpstream;
    let gw: TestGateway;
    let acme: string;
    let other: string;
    let ops: string;
    let owner: ConsoleSession;
    let member: ConsoleSession;
    let outsider: ConsoleSession;
    let admin: ConsoleSession;
    let key: { id: string; secret: string };
    const secrets: string[] = [];

    async function call(
      method: string,
      path: string,
      opts: { cookie?: string; body?: unknown; raw?: string; origin?: string | null } = {},
    ): Promise<Res> {
      const headers: Record<string, string> = {};
      if (opts.cookie) headers.cookie = opts.cookie;
      const origin = opts.origin === undefined ? (method === "GET" ? null : gw.origin) : opts.origin;
      if (origin) headers.origin = origin;
      let body: string | undefined;
      if (opts.body !== undefined || opts.raw !== undefined) {
        headers["content-type"] = "application/json";
        body = opts.raw ?? JSON.stringify(opts.body);
      }
      const res = await fetch(`${gw.origin}/api/console${path}`, { method, headers, body });
      const text = await res.text();
      let json: any;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, body: json, text };
    }

    const get = (path: string, who: ConsoleSession | undefined) => call("GET", path, { cookie: who?.cookie });

    /** The status of a login from another client address (127.x.y.z is loopback on Linux). */
    function loginFrom(localAddress: string, email: string, password: string): Promise<number> {
      const body = JSON.stringify({ email, password });
      return new Promise((resolve, reject) => {
        const req = httpRequest(
          `${gw.origin}/api/console/login`,
          {
            method: "POST",
            localAddress,
            agent: false,
            headers: {
              origin: gw.origin,
              "content-type": "application/json",
              "content-length": Buffer.byteLength(body),
            },
          },
          (res) => {
            res.resume().on("end", () => resolve(res.statusCode!));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    }

    function refused(res: Res, status: number, code: string, param?: string | null): void {
      assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${res.text}`);
      assert.equal(res.body?.error?.code, code, res.text);
      assert.equal(typeof res.body.error.message, "string");
      assert.equal(typeof res.body.error.type, "string");
      if (param !== undefined) assert.equal(res.body.error.param, param, res.text);
    }

    /** A chat call through /v1; returns its request id. */
    async function chat(
      secret: string,
      content: string,
      model = TEST_MODEL,
    ): Promise<{ status: number; id: string; code?: string }> {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content }], temperature: 0.5 }),
      });
      const body = (await res.json()) as any;
      return { status: res.status, id: res.headers.get("x-request-id")!, code: body?.error?.code };
    }

    async function v1Status(secret: string): Promise<{ status: number; code?: string }> {
      const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${secret}` } });
      const body = (await res.json()) as any;
      return { status: res.status, code: body?.error?.code };
    }

    before(async () => {
      upstream = await startMockUpstream({ apiKey: "sk-upstream-secret-123" });
      const models = testConfig(upstream).models.map((m) =>
        m.id === TEST_MODEL ? { ...m, pricing: PRICING } : m,
      );
      gw = await startTestGateway({ upstream, store, config: { models } });
      acme = await gw.account("acme");
      other = await gw.account("other");
      ops = await gw.account("ops");
      owner = await gw.consoleUser(acme, { role: "owner" });
      member = await gw.consoleUser(acme, { role: "member" });
      outsider = await gw.consoleUser(other, { role: "owner" });
      admin = await gw.consoleUser(ops, { role: "admin" });
      key = await gw.key(acme, { name: "app-one" });
      secrets.push(key.secret, owner.password, member.password, outsider.password, admin.password);
      secrets.push(...[owner, member, outsider, admin].map((s) => s.cookie.split("=")[1]!));
    });

    after(async () => {
      await gw?.close();
      await upstream?.close();
    });

    describe("session", () => {
      test("login sets an HttpOnly, SameSite=Strict cookie (not Secure over plain HTTP); the store keeps only its hash", async () => {
        const res = await call("POST", "/login", {
          body: { email: member.email.toUpperCase(), password: member.password },
        });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.body.user).sort(), [
          "account_id",
          "created_at",
          "disabled",
          "email",
          "id",
          "role",
        ]);
        assert.equal(res.body.user.email, member.email);
        assert.equal(res.body.user.role, "member");
        assert.equal(res.body.user.account_id, acme);
        const setCookie = res.headers.get("set-cookie") ?? "";
        const attributes = setCookie.split(";").map((s) => s.trim());
        const [pair, ...flags] = attributes;
        assert.match(pair!, /^gw_session=[A-Za-z0-9_-]{43}$/);
        assert.ok(flags.includes("HttpOnly"), setCookie);
        assert.ok(flags.includes("SameSite=Strict"), setCookie);
        assert.ok(flags.includes("Path=/"), setCookie);
        assert.ok(
          flags.some((f) => /^Max-Age=\d+$/.test(f) && Number(f.slice(8)) > 0),
          setCookie,
        );
        assert.ok(!flags.some((f) => f.toLowerCase() === "secure"), "no Secure over plain HTTP");
        const value = pair!.split("=")[1]!;
        secrets.push(value);
        const rows = await gw.gateway.deps.store.db.selectFrom("sessions").selectAll().execute();
        const hash = createHash("sha256").update(value).digest("hex");
        assert.ok(
          rows.some((r) => r.id_hash === hash),
          "the session is stored by its SHA-256",
        );
        for (const r of rows) for (const v of Object.values(r)) assert.ok(!String(v).includes(value));
        const me = await call("GET", "/me", { cookie: pair! });
        assert.equal(me.status, 200);
        assert.equal(me.body.user.id, member.id);
      });

      test("a wrong password, an unknown e-mail and a disabled user all get invalid_credentials", async () => {
        const wrong = await call("POST", "/login", {
          body: { email: owner.email, password: "not the password" },
        });
        refused(wrong, 401, "invalid_credentials");
        const unknown = await call("POST", "/login", {
          body: { email: "nobody@example.test", password: "whatever123" },
        });
        refused(unknown, 401, "invalid_credentials");
        assert.equal(unknown.body.error.message, wrong.body.error.message, "the same answer either way");
        assert.equal(wrong.headers.get("set-cookie"), null);
        const bad = await call("POST", "/login", { body: { email: owner.email } });
        refused(bad, 400, "invalid_request", "password");
        const extra = await call("POST", "/login", {
          body: { email: owner.email, password: "x", remember: true },
        });
        refused(extra, 400, "invalid_request", "remember");
      });

      test("me answers the user and the account; logged out, or with a bogus cookie, it is console_unauthenticated", async () => {
        const me = await get("/me", owner);
        assert.equal(me.status, 200);
        assert.equal(me.body.user.id, owner.id);
        assert.equal(me.body.user.role, "owner");
        assert.equal(me.body.account.id, acme);
        assert.equal(me.body.account.name, "acme");
        assert.equal(me.body.account.plan_id, "default");
        assert.equal(me.body.account.quota_tokens, 1_000_000_000);
        assert.equal(me.body.account.disabled, false);
        assert.equal(
          me.body.account.remaining_tokens,
          me.body.account.quota_tokens - me.body.account.used_tokens,
        );
        assert.equal(me.headers.get("cache-control"), "no-store");

        refused(await get("/me", undefined), 401, "console_unauthenticated");
        const bogus = await call("GET", "/me", {
          cookie: "gw_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        });
        refused(bogus, 401, "console_unauthenticated");
        assert.match(
          bogus.headers.get("set-cookie") ?? "",
          /^gw_session=;.*Max-Age=0/,
          "a stale cookie is cleared",
        );
        // a key is not a session
        const withKey = await fetch(`${gw.origin}/api/console/me`, {
          headers: { authorization: `Bearer ${key.secret}` },
        });
        assert.equal(withKey.status, 401);
        // and a session does not call /v1
        const v1 = await fetch(`${gw.baseURL}/models`, { headers: { cookie: owner.cookie } });
        assert.equal(v1.status, 401);
      });

      test("logout deletes the session and clears the cookie", async () => {
        const session = await gw.consoleLogin(member.email, member.password);
        const out = await call("POST", "/logout", { cookie: session });
        assert.equal(out.status, 204);
        assert.match(out.headers.get("set-cookie") ?? "", /^gw_session=;.*Max-Age=0/);
        refused(await call("GET", "/me", { cookie: session }), 401, "console_unauthenticated");
        // without a session it still answers 204
        assert.equal((await call("POST", "/logout")).status, 204);
        // the other sessions of the user live on
        assert.equal((await get("/me", member)).status, 200);
      });

      test("an expired session (12 h idle or 7 days old) is refused; use moves the idle expiry", async () => {
        const db = gw.gateway.deps.store.db;
        const session = await gw.consoleLogin(member.email, member.password);
        const hash = createHash("sha256").update(session.split("=")[1]!).digest("hex");
        const now = Date.now();
        // last used 2 minutes ago: the next use moves expires_at to 12 h from then
        await db
          .updateTable("sessions")
          .set({ last_seen_at: now - 120_000, expires_at: now - 120_000 + 12 * 3_600_000 })
          .where("id_hash", "=", hash)
          .execute();
        const before = Date.now();
        assert.equal((await call("GET", "/me", { cookie: session })).status, 200);
        let row = await db
          .selectFrom("sessions")
          .selectAll()
          .where("id_hash", "=", hash)
          .executeTakeFirstOrThrow();
        assert.ok(Number(row.last_seen_at) >= before);
        assert.equal(Number(row.expires_at), Number(row.last_seen_at) + 12 * 3_600_000);
        // never past 7 days after login
        await db
          .updateTable("sessions")
          .set({ created_at: now - 7 * DAY_MS + 60_000, last_seen_at: now - 120_000 })
          .where("id_hash", "=", hash)
          .execute();
        assert.equal((await call("GET", "/me", { cookie: session })).status, 200);
        row = await db
          .selectFrom("sessions")
          .selectAll()
          .where("id_hash", "=", hash)
          .executeTakeFirstOrThrow();
        assert.equal(Number(row.expires_at), Number(row.created_at) + 7 * DAY_MS);
        // idle past its expiry
        await db
          .updateTable("sessions")
          .set({ expires_at: Date.now() - 1 })
          .where("id_hash", "=", hash)
          .execute();
        refused(await call("GET", "/me", { cookie: session }), 401, "console_unauthenticated");
      });

      test("state-changing calls need the gateway's own Origin, checked before the body", async () => {
        const body = { name: "nope" };
        for (const origin of [
          null,
          "http://evil.example",
          "null",
          `${gw.origin}.evil.example`,
          "not a url",
        ]) {
          const res = await call("POST", "/keys", { cookie: owner.cookie, body, origin });
          refused(res, 403, "origin_mismatch");
        }
        // the body is not looked at: broken JSON still gets origin_mismatch
        refused(
          await call("POST", "/keys", {
            cookie: owner.cookie,
            raw: "{broken",
            origin: "http://evil.example",
          }),
          403,
          "origin_mismatch",
        );
        refused(
          await call("DELETE", `/keys/${key.id}`, { cookie: owner.cookie, origin: null }),
          403,
          "origin_mismatch",
        );
        refused(
          await call("PATCH", `/keys/${key.id}`, {
            cookie: owner.cookie,
            body: { disabled: true },
            origin: null,
          }),
          403,
          "origin_mismatch",
        );
        // login and logout too
        refused(
          await call("POST", "/login", {
            body: { email: owner.email, password: owner.password },
            origin: null,
          }),
          403,
          "origin_mismatch",
        );
        // no key was created or changed
        const keys = await get("/keys", owner);
        assert.deepEqual(
          keys.body.data.map((k: any) => [k.name, k.disabled]),
          [["app-one", false]],
        );
        // the gateway's own origin passes; so does https for this host (TLS ended by a proxy)
        assert.equal((await call("POST", "/logout", { origin: gw.origin })).status, 204);
        assert.equal(
          (await call("POST", "/logout", { origin: gw.origin.replace("http:", "https:") })).status,
          204,
        );
        refused(
          await call("POST", "/logout", { origin: gw.origin.replace("127.0.0.1", "localhost") }),
          403,
          "origin_mismatch",
        );
      });

      test("an unknown console route is a 404 envelope", async () => {
        const res = await get("/nothing-here", owner);
        refused(res, 404, "http_error");
      });
    });

    describe("account views", () => {
      test("overview: account, plan, today's tokens and calls, daily rows by key and model", async () => {
        const calls = [
          await chat(key.secret, "hello overview mock:tokens=5"),
          await chat(key.secret, "second call here mock:tokens=3"),
          await chat(key.secret, "this one fails mock:status=500"),
        ];
        assert.deepEqual(
          calls.map((c) => c.status),
          [200, 200, 502],
        );
        const res = await get("/overview", member);
        assert.equal(res.status, 200, res.text);
        const { account, plan, today, daily } = res.body;
        assert.equal(account.id, acme);
        assert.equal(plan.id, "default");
        assert.deepEqual(plan.models, [TEST_MODEL, "demo"]);
        const recorded = await gw.recorded("account_id", acme);
        assert.deepEqual({ tokens: today.tokens, calls: today.calls }, recorded);
        assert.equal(account.used_tokens, recorded.tokens);
        assert.equal(
          today.tokens,
          words("hello overview mock:tokens=5") + 5 + words("second call here mock:tokens=3") + 3,
        );
        const row = daily.find((d: any) => d.key_id === key.id && d.model === TEST_MODEL);
        assert.ok(row, JSON.stringify(daily));
        assert.equal(row.day, utcDay(Date.now()));
        assert.equal(row.key_prefix, key.secret.slice(0, row.key_prefix.length));
        assert.equal(row.key_name, "app-one");
        assert.equal(row.calls, 3);
        // what the calls cost, by hand (the failed one nothing), in the day's row and in today
        const cost =
          costOf(words("hello overview mock:tokens=5"), 5) +
          costOf(words("second call here mock:tokens=3"), 3);
        assert.equal(cost, 78_000);
        assert.equal(row.cost_nanos, cost);
        assert.equal(today.cost_nanos, cost);
        // no budget: spent in total, nothing left to count, no reset
        assert.deepEqual(
          [
            account.budget_nanos,
            account.budget_period,
            account.spent_nanos,
            account.left_nanos,
            account.budget_resets_at,
          ],
          [null, "none", cost, null, null],
        );
        // the chart covers 30 days: older aggregates are left out
        const db = gw.gateway.deps.store.db;
        await db
          .insertInto("daily_usage")
          .values([
            {
              account_id: acme,
              day: utcDay(Date.now() - 29 * DAY_MS),
              key_id: key.id,
              model: TEST_MODEL,
              prompt_tokens: 1,
              completion_tokens: 1,
              total_tokens: 2,
              calls: 1,
            },
            {
              account_id: acme,
              day: utcDay(Date.now() - 30 * DAY_MS),
              key_id: key.id,
              model: TEST_MODEL,
              prompt_tokens: 1,
              completion_tokens: 1,
              total_tokens: 2,
              calls: 1,
            },
          ])
          .execute();
        const days = (await get("/overview", member)).body.daily.map((d: any) => d.day);
        assert.ok(days.includes(utcDay(Date.now() - 29 * DAY_MS)));
        assert.ok(!days.includes(utcDay(Date.now() - 30 * DAY_MS)));
      });

      test("models and plans", async () => {
        const models = await get("/models", member);
        assert.equal(models.status, 200);
        assert.deepEqual(models.body, {
          data: [
            { id: TEST_MODEL, owned_by: "acme" },
            { id: "demo", owned_by: "chat-gateway" },
          ],
        });
        const plans = await get("/plans", member);
        assert.equal(plans.status, 200);
        assert.equal(plans.body.current.id, "default");
        assert.deepEqual(
          plans.body.plans.map((p: any) => [p.id, p.quota_tokens, p.models]),
          [
            ["default", 1_000_000_000, [TEST_MODEL, "demo"]],
            ["demo-only", 1_000_000, ["demo"]],
          ],
        );
        assert.deepEqual(Object.keys(plans.body.current.rate_limits).sort(), ["account", "key"]);
        // content safety as it applies to the account, so client authors can see whether
        // `stream: true` still gets SSE (issue #17)
        assert.deepEqual(plans.body.safety, { enabled: false, streaming: "json" });
        const db = gw.gateway.deps.store.db;
        await updateAccount(db, acme, { safety: "on", safety_streaming: "reviewed" });
        try {
          assert.deepEqual((await get("/plans", member)).body.safety, {
            enabled: true,
            streaming: "reviewed",
          });
        } finally {
          await updateAccount(db, acme, { safety: null, safety_streaming: null });
        }
      });

      test("a member naming another account gets not_found; an admin may act on any account", async () => {
        for (const path of ["/overview", "/models", "/plans", "/keys", "/records", "/tickets"]) {
          refused(await get(`${path}?account=${other}`, member), 404, "not_found", "account");
          refused(await get(`${path}?account=acc_doesnotexist00`, member), 404, "not_found", "account");
        }
        // naming one's own account is fine
        assert.equal((await get(`/overview?account=${acme}`, member)).status, 200);
        const asAdmin = await get(`/overview?account=${acme}`, admin);
        assert.equal(asAdmin.status, 200);
        assert.equal(asAdmin.body.account.id, acme);
        refused(await get("/overview?account=acc_doesnotexist00", admin), 404, "not_found");
        refused(await get("/overview?acount=x", member), 400, "invalid_request", "acount");
        refused(
          await get(`/overview?account=${acme}&account=${acme}`, member),
          400,
          "invalid_request",
          "account",
        );
      });

      test("logged out, every account view is console_unauthenticated", async () => {
        for (const path of [
          "/overview",
          "/models",
          "/plans",
          "/keys",
          "/records",
          "/records/export",
          "/tickets",
          "/admin/accounts",
        ])
          refused(await get(path, undefined), 401, "console_unauthenticated");
        refused(await call("POST", "/keys", { body: {} }), 401, "console_unauthenticated");
      });
    });

    describe("keys", () => {
      test("list: newest first, with consumption; members may read them", async () => {
        const res = await get("/keys", member);
        assert.equal(res.status, 200);
        assert.equal(res.body.data.length, 1);
        const k = res.body.data[0];
        assert.deepEqual(Object.keys(k).sort(), [
          "budget_nanos",
          "budget_period",
          "budget_resets_at",
          "created_at",
          "disabled",
          "id",
          "left_nanos",
          "limit_tokens",
          "name",
          "prefix",
          "spent_nanos",
          "used_tokens",
        ]);
        assert.equal(k.id, key.id);
        assert.equal(k.used_tokens, (await gw.recorded("key_id", key.id)).tokens);
        const spent = await gw.gateway.deps.store.db
          .selectFrom("call_records")
          .select((eb) => eb.fn.sum<number>("cost_nanos").as("cost"))
          .where("key_id", "=", key.id)
          .executeTakeFirstOrThrow();
        assert.ok(Number(spent.cost) > 0);
        assert.equal(
          k.spent_nanos,
          Number(spent.cost),
          "the key's spending is the sum of its records' costs",
        );
        assert.ok(!JSON.stringify(res.body).includes(key.secret));
      });

      test("owners create keys (the secret once) that work on /v1 at once; members may not", async () => {
        refused(
          await call("POST", "/keys", { cookie: member.cookie, body: { name: "m" } }),
          403,
          "console_forbidden",
        );
        const res = await call("POST", "/keys", {
          cookie: owner.cookie,
          body: { name: "app-two", limit_tokens: 5000 },
        });
        assert.equal(res.status, 201, res.text);
        assert.match(res.body.secret, /^sk-[A-Za-z0-9]{43}$/);
        secrets.push(res.body.secret);
        assert.equal(res.body.key.name, "app-two");
        assert.equal(res.body.key.limit_tokens, 5000);
        assert.equal(res.body.key.prefix, res.body.secret.slice(0, res.body.key.prefix.length));
        assert.equal((await chat(res.body.secret, "new key works mock:tokens=2")).status, 200);
        const list = await get("/keys", owner);
        assert.deepEqual(
          list.body.data.map((k: any) => k.name),
          ["app-two", "app-one"],
        );
        assert.ok(!list.text.includes(res.body.secret), "the secret is shown only once");
        // no body at all: an unnamed key without limit
        const bare = await call("POST", "/keys", { cookie: owner.cookie });
        assert.equal(bare.status, 201);
        assert.equal(bare.body.key.name, null);
        secrets.push(bare.body.secret);
        refused(
          await call("POST", "/keys", { cookie: owner.cookie, body: { limit_tokens: -1 } }),
          400,
          "invalid_request",
          "limit_tokens",
        );
        refused(
          await call("POST", "/keys", { cookie: owner.cookie, body: { secret: "sk-mine" } }),
          400,
          "invalid_request",
          "secret",
        );
        refused(await call("POST", "/keys", { cookie: owner.cookie, raw: "[1]" }), 400, "invalid_request");
        refused(await call("POST", "/keys", { cookie: owner.cookie, raw: "{oops" }), 400, "invalid_json");
      });

      test("rename, limit, disable and enable: /v1 honours each change at once", async () => {
        const k = await gw.key(acme, { name: "toggle" });
        secrets.push(k.secret);
        assert.equal((await v1Status(k.secret)).status, 200);
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: member.cookie, body: { disabled: true } }),
          403,
          "console_forbidden",
        );
        let res = await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { disabled: true } });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.key.disabled, true);
        // no wait: this instance dropped its key cache
        assert.deepEqual(await v1Status(k.secret), { status: 403, code: "key_disabled" });
        res = await call("PATCH", `/keys/${k.id}`, {
          cookie: owner.cookie,
          body: { disabled: false, name: "renamed" },
        });
        assert.equal(res.body.key.disabled, false);
        assert.equal(res.body.key.name, "renamed");
        assert.equal((await v1Status(k.secret)).status, 200);
        res = await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { limit_tokens: 0 } });
        assert.equal(res.body.key.limit_tokens, 0);
        assert.equal((await chat(k.secret, "over the limit")).status, 429);
        res = await call("PATCH", `/keys/${k.id}`, {
          cookie: owner.cookie,
          body: { limit_tokens: null, name: null },
        });
        assert.equal(res.body.key.limit_tokens, null);
        assert.equal(res.body.key.name, null);
        assert.equal((await chat(k.secret, "no limit again mock:tokens=1")).status, 200);
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: {} }),
          400,
          "invalid_request",
        );
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { disabled: "yes" } }),
          400,
          "invalid_request",
          "disabled",
        );
      });

      test("delete: the key stops working on /v1 at once and leaves the list; its records stay", async () => {
        const k = await gw.key(acme, { name: "doomed" });
        secrets.push(k.secret);
        const used = await chat(k.secret, "before deletion mock:tokens=2");
        assert.equal(used.status, 200);
        refused(await call("DELETE", `/keys/${k.id}`, { cookie: member.cookie }), 403, "console_forbidden");
        const res = await call("DELETE", `/keys/${k.id}`, { cookie: owner.cookie });
        assert.equal(res.status, 204);
        assert.deepEqual(await v1Status(k.secret), { status: 401, code: "invalid_api_key" });
        const refusedChat = await chat(k.secret, "after deletion");
        assert.equal(refusedChat.status, 401);
        const list = await get("/keys", owner);
        assert.ok(!list.body.data.some((x: any) => x.id === k.id));
        refused(await call("DELETE", `/keys/${k.id}`, { cookie: owner.cookie }), 404, "not_found");
        refused(
          await call("PATCH", `/keys/${k.id}`, { cookie: owner.cookie, body: { disabled: false } }),
          404,
          "not_found",
        );
        assert.equal((await v1Status(k.secret)).status, 401, "not revived by a refused change");
        // its record is still there, with its key
        const record = await gw.record(used.id);
        assert.equal(record.key_id, k.id);
        const records = await get(`/records?key=${k.id}`, owner);
        assert.equal(records.status, 200);
        assert.ok(records.body.data.some((r: any) => r.request_id === used.id && r.key_name === "doomed"));
      });

      test("another account's keys are not_found; an admin manages any account's keys with ?account=", async () => {
        const theirs = await gw.key(other, { name: "theirs" });
        secrets.push(theirs.secret);
        refused(
          await call("PATCH", `/keys/${theirs.id}`, { cookie: owner.cookie, body: { disabled: true } }),
          404,
          "not_found",
        );
        refused(await call("DELETE", `/keys/${theirs.id}`, { cookie: owner.cookie }), 404, "not_found");
        refused(await call("DELETE", "/keys/not%20an%20id", { cookie: owner.cookie }), 404, "not_found");
        assert.equal((await v1Status(theirs.secret)).status, 200);
        const res = await call("PATCH", `/keys/${theirs.id}?account=${other}`, {
          cookie: admin.cookie,
          body: { disabled: true },
        });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(await v1Status(theirs.secret), { status: 403, code: "key_disabled" });
        const created = await call("POST", `/keys?account=${other}`, {
          cookie: admin.cookie,
          body: { name: "by-admin" },
        });
        assert.equal(created.status, 201);
        secrets.push(created.body.secret);
        const list = await get("/keys", outsider);
        assert.ok(list.body.data.some((k: any) => k.name === "by-admin"));
      });
    });

    describe("call records", () => {
      let recAccount: string;
      let recOwner: ConsoleSession;
      let k1: { id: string; secret: string };
      let k2: { id: string; secret: string };
      const today: string[] = [];

      before(async () => {
        recAccount = await gw.account("records");
        recOwner = await gw.consoleUser(recAccount, { role: "owner" });
        k1 = await gw.key(recAccount, { name: "first" });
        k2 = await gw.key(recAccount, { name: "second" });
        secrets.push(k1.secret, k2.secret, recOwner.password, recOwner.cookie.split("=")[1]!);
        // through /v1: successes on two keys and two models, an upstream failure, a refusal
        const calls: [{ secret: string }, string, string?][] = [
          [k1, "one mock:tokens=4"],
          [k2, "two mock:tokens=6"],
          [k1, "three mock:tokens=2", "demo"],
          [k2, "four mock:status=500"],
          [k1, "five", "no-such-model"],
          [k1, "six mock:tokens=1"],
        ];
        for (const [k, content, model] of calls) {
          today.push((await chat(k.secret, content, model)).id);
          await tick();
        }
      });

      test("Today: every call of the day, failed ones too, newest first, with the record's fields", async () => {
        const res = await get("/records", recOwner);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.next_before, null);
        assert.deepEqual(
          res.body.data.map((r: any) => r.request_id),
          [...today].reverse(),
        );
        const r = res.body.data.find((x: any) => x.request_id === today[0]);
        assert.deepEqual(Object.keys(r).sort(), [...RECORD_FIELDS].sort());
        const stored = await gw.record(today[0]!);
        assert.equal(r.created_at, Number(stored.created_at));
        assert.equal(r.key_id, k1.id);
        assert.equal(r.key_name, "first");
        assert.equal(r.key_prefix, k1.secret.slice(0, r.key_prefix.length));
        assert.equal(r.model, TEST_MODEL);
        assert.equal(r.api, "chat.completions");
        assert.equal(stored.api, "chat.completions");
        assert.equal(r.prompt_tokens, words("one mock:tokens=4"));
        assert.equal(r.completion_tokens, 4);
        assert.equal(r.total_tokens, r.prompt_tokens + 4);
        assert.equal(r.status, "ok");
        assert.equal(r.http_status, 200);
        assert.equal(r.stream, false);
        assert.equal(r.usage_source, "upstream");
        assert.deepEqual(r.params, JSON.parse(stored.params!));
        assert.equal(r.params.temperature, 0.5);
        assert.equal(r.safety_categories, null);
        // its cost by hand, with the token kinds it was computed from
        assert.deepEqual(
          [r.cached_tokens, r.cache_write_tokens, r.reasoning_tokens, r.cost_nanos, r.cost_source],
          [0, 0, 0, costOf(r.prompt_tokens, 4), "config"],
        );
        assert.equal(r.cost_nanos, Number(stored.cost_nanos));
        assert.equal(r.cost_usd, r.cost_nanos / 1e9);
        const unpriced = res.body.data.find((x: any) => x.request_id === today[2]);
        assert.equal(unpriced.model, "demo");
        assert.deepEqual([unpriced.cost_nanos, unpriced.cost_usd, unpriced.cost_source], [0, 0, "unpriced"]);
        const failed = res.body.data.find((x: any) => x.request_id === today[3]);
        assert.equal(failed.http_status, 502);
        assert.equal(failed.error_code, "upstream_error");
        assert.equal(failed.total_tokens, 0);
        const unknownModel = res.body.data.find((x: any) => x.request_id === today[4]);
        assert.equal(unknownModel.http_status, 404);
        assert.equal(unknownModel.error_code, "model_not_found");
        assert.deepEqual([unknownModel.cost_nanos, unknownModel.cost_source], [0, null]);
      });

      test("filters by key, model and status; keyset pages cover the view exactly once", async () => {
        const byKey = await get(`/records?key=${k2.id}`, recOwner);
        assert.deepEqual(
          byKey.body.data.map((r: any) => r.request_id),
          [today[3], today[1]],
        );
        const byModel = await get("/records?model=demo", recOwner);
        assert.deepEqual(
          byModel.body.data.map((r: any) => r.request_id),
          [today[2]],
        );
        // a call refused by the gateway or failed upstream before any output is an "error"
        // (upstream_error is a stream cut after output began)
        const failed = (await get("/records?status=error", recOwner)).body.data;
        assert.deepEqual(
          failed.map((r: any) => r.request_id),
          [today[4], today[3]],
        );
        assert.deepEqual((await get("/records?status=upstream_error", recOwner)).body.data, []);
        const both = await get(`/records?key=${k1.id}&status=ok&model=${TEST_MODEL}`, recOwner);
        assert.deepEqual(
          both.body.data.map((r: any) => r.request_id),
          [today[5], today[0]],
        );
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const res = await get(
            `/records?limit=2${cursor ? `&before=${encodeURIComponent(cursor)}` : ""}`,
            recOwner,
          );
          assert.equal(res.status, 200, res.text);
          assert.ok(res.body.data.length <= 2);
          seen.push(...res.body.data.map((r: any) => r.request_id));
          cursor = res.body.next_before;
          pages++;
        } while (cursor && pages < 10);
        assert.deepEqual(seen, [...today].reverse());
        assert.equal(pages, 3);
      });

      test("bad query strings are 400s naming the parameter; another account's key is not_found", async () => {
        refused(await get("/records?limit=0", recOwner), 400, "invalid_request", "limit");
        refused(await get("/records?limit=501", recOwner), 400, "invalid_request", "limit");
        refused(await get("/records?limit=ten", recOwner), 400, "invalid_request", "limit");
        refused(await get("/records?view=week", recOwner), 400, "invalid_request", "view");
        refused(await get("/records?status=fine", recOwner), 400, "invalid_request", "status");
        refused(await get("/records?before=yesterday", recOwner), 400, "invalid_request", "before");
        refused(await get("/records?sort=asc", recOwner), 400, "invalid_request", "sort");
        refused(await get(`/records?key=${key.id}`, recOwner), 404, "not_found", "key");
        refused(await get("/records/export?format=xlsx", recOwner), 400, "invalid_request", "format");
        refused(await get("/records/export?limit=5", recOwner), 400, "invalid_request", "limit");
      });

      test("Last year: the newest 1000 consumption records of 365 days; filters within those", async () => {
        const db = gw.gateway.deps.store.db;
        const day0 = startOfUtcDay(Date.now());
        const rows: CallRecord[] = [];
        // 1010 consumption records on past days (the oldest 10 fall outside the 1000 with
        // today's 4), zero-token ones, and consumption older than 365 days
        for (let i = 0; i < 1010; i++)
          rows.push(
            fabricated({
              request_id: `req_old${String(i).padStart(6, "0")}`,
              created_at: day0 - DAY_MS - i * 3_600_000,
              account_id: recAccount,
              key_id: i % 2 ? k1.id : k2.id,
              // the 10 oldest use a model nothing newer uses
              public_model: i >= 1000 ? "ancient" : TEST_MODEL,
              status: i % 7 ? "ok" : "client_disconnect",
            }),
          );
        for (let i = 0; i < 20; i++)
          rows.push(
            fabricated({
              request_id: `req_zero${String(i).padStart(5, "0")}`,
              created_at: day0 - DAY_MS - i * 1000,
              account_id: recAccount,
              status: "error",
              prompt_tokens: 0,
              completion_tokens: 0,
              total_tokens: 0,
            }),
          );
        rows.push(
          fabricated({
            request_id: "req_tooold0000001",
            created_at: day0 - 365 * DAY_MS,
            account_id: recAccount,
            public_model: "ancient",
          }),
        );
        for (let i = 0; i < rows.length; i += 200)
          await db
            .insertInto("call_records")
            .values(rows.slice(i, i + 200))
            .execute();

        const all: any[] = [];
        let cursor: string | null = null;
        do {
          const res = await get(
            `/records?view=year&limit=500${cursor ? `&before=${encodeURIComponent(cursor)}` : ""}`,
            recOwner,
          );
          assert.equal(res.status, 200, res.text);
          all.push(...res.body.data);
          cursor = res.body.next_before;
        } while (cursor);
        assert.equal(all.length, 1000);
        assert.ok(
          all.every((r) => r.total_tokens > 0),
          "consumption records only",
        );
        const todaysConsumption = (await get("/records", recOwner)).body.data.filter(
          (r: any) => r.total_tokens > 0,
        );
        assert.equal(todaysConsumption.length, 4);
        assert.deepEqual(
          all.slice(0, 4).map((r) => r.request_id),
          todaysConsumption.map((r: any) => r.request_id),
          "today's consumption records lead the year view",
        );
        assert.ok(!all.some((r) => r.model === "ancient"));
        for (let i = 1; i < all.length; i++)
          assert.ok(
            all[i - 1].created_at > all[i].created_at ||
              (all[i - 1].created_at === all[i].created_at && all[i - 1].request_id > all[i].request_id),
            "newest first",
          );
        // a filter never reaches past the 1000
        assert.deepEqual((await get("/records?view=year&model=ancient", recOwner)).body.data, []);
        const disconnects = (await get("/records?view=year&status=client_disconnect&limit=500", recOwner))
          .body.data;
        assert.deepEqual(
          disconnects.map((r: any) => r.request_id),
          all.filter((r) => r.status === "client_disconnect").map((r) => r.request_id),
        );
        const byKey = (await get(`/records?view=year&key=${k2.id}&limit=500`, recOwner)).body;
        assert.equal(byKey.next_before, null);
        assert.deepEqual(
          byKey.data.map((r: any) => r.request_id),
          all.filter((r) => r.key_id === k2.id).map((r) => r.request_id),
        );
      });

      test("export CSV: the whole view, RFC 4180, formula cells neutralised, as an attachment", async () => {
        const db = gw.gateway.deps.store.db;
        await db
          .insertInto("call_records")
          .values(
            fabricated({
              request_id: "req_injection00001",
              created_at: Date.now(),
              account_id: recAccount,
              key_id: k1.id,
              public_model: '=HYPERLINK("http://evil","x"),more',
              error_code: "+cmd|' /C calc'!A0",
              params: '{"note":"line\\nbreak, and \\"quotes\\""}',
              status: "error",
              safety_categories: '["violence","-x"]',
              // $0.00000015: String() would write 1.5e-7
              cost_nanos: 150,
              cost_source: "table",
              cached_tokens: 2,
            }),
          )
          .execute();
        const res = await fetch(`${gw.origin}/api/console/records/export?format=csv`, {
          headers: { cookie: recOwner.cookie },
        });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^text\/csv/);
        assert.equal(
          res.headers.get("content-disposition"),
          `attachment; filename="records-today-${utcDay(Date.now())}.csv"`,
        );
        const text = await res.text();
        assert.ok(text.endsWith("\r\n"));
        const [header, ...rows] = parseCsv(text);
        // Spelled out, not RECORD_FIELDS: readers take CSV columns by position, so the
        // contract's columns keep their places and every column added since comes after them.
        assert.deepEqual(header, [
          ...["request_id", "created_at", "key_id", "key_prefix", "key_name", "model"],
          ...["prompt_tokens", "completion_tokens", "total_tokens", "status", "http_status"],
          ...["error_code", "latency_ms", "ttft_ms", "stream", "params", "usage_source"],
          ...["safety_verdict", "safety_categories"],
          // #18's prices
          ...["cached_tokens", "cache_write_tokens", "reasoning_tokens", "cost_usd", "cost_nanos"],
          "cost_source",
          // #19's client APIs
          "api",
        ]);
        assert.deepEqual(header, [...RECORD_FIELDS]);
        const view = (await get("/records?limit=500", recOwner)).body.data;
        assert.equal(rows.length, view.length);
        rows.forEach((row, i) => {
          assert.deepEqual(
            row,
            // dollars as the exact decimal of the nanodollars, never in exponent form
            RECORD_FIELDS.map((f) =>
              f === "cost_usd" ? formatUsd(view[i].cost_nanos) : csvText(view[i][f]),
            ),
            `row ${i}`,
          );
        });
        const injected = rows.find((r) => r[0] === "req_injection00001")!;
        const cell = (f: (typeof RECORD_FIELDS)[number]) => injected[RECORD_FIELDS.indexOf(f)];
        assert.deepEqual(
          [cell("cost_usd"), cell("cost_nanos"), cell("cost_source"), cell("cached_tokens")],
          ["0.00000015", "150", "table", "2"],
        );
        const priced = rows.find((r) => r[0] === today[0])!;
        assert.equal(
          priced[RECORD_FIELDS.indexOf("cost_usd")],
          formatUsd(costOf(words("one mock:tokens=4"), 4)),
        );
        assert.equal(injected[RECORD_FIELDS.indexOf("model")], `'=HYPERLINK("http://evil","x"),more`);
        assert.equal(injected[RECORD_FIELDS.indexOf("error_code")], "'+cmd|' /C calc'!A0");
        assert.deepEqual(JSON.parse(injected[RECORD_FIELDS.indexOf("params")]!), {
          note: 'line\nbreak, and "quotes"',
        });
        assert.match(
          text,
          /"'=HYPERLINK\(""http:\/\/evil"",""x""\),more"/,
          "quotes doubled inside a quoted field",
        );
      });

      test("export JSON Lines of the Last-year view: 1000 records equal to the API's", async () => {
        const res = await fetch(`${gw.origin}/api/console/records/export?view=year&format=jsonl`, {
          headers: { cookie: recOwner.cookie },
        });
        assert.equal(res.status, 200);
        assert.match(res.headers.get("content-type") ?? "", /^application\/x-ndjson/);
        assert.equal(
          res.headers.get("content-disposition"),
          `attachment; filename="records-year-${utcDay(Date.now())}.jsonl"`,
        );
        const lines = (await res.text()).split("\n");
        assert.equal(lines.pop(), "", "every line ends with a newline");
        const exported = lines.map((l) => JSON.parse(l));
        assert.equal(exported.length, 1000);
        const viewed: any[] = [];
        let cursor: string | null = null;
        do {
          const page = await get(
            `/records?view=year&limit=500${cursor ? `&before=${encodeURIComponent(cursor)}` : ""}`,
            recOwner,
          );
          viewed.push(...page.body.data);
          cursor = page.body.next_before;
        } while (cursor);
        assert.deepEqual(exported, viewed);
        // filters apply to the export too
        const filtered = await fetch(
          `${gw.origin}/api/console/records/export?view=year&format=jsonl&key=${k1.id}`,
          {
            headers: { cookie: recOwner.cookie },
          },
        );
        const keyLines = (await filtered.text())
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        assert.deepEqual(
          keyLines.map((r) => r.request_id),
          viewed.filter((r) => r.key_id === k1.id).map((r) => r.request_id),
        );
        // an empty view is just the header (CSV) or nothing (JSONL)
        const none = await fetch(`${gw.origin}/api/console/records/export?format=csv&model=none-such`, {
          headers: { cookie: recOwner.cookie },
        });
        assert.equal(await none.text(), `${RECORD_FIELDS.join(",")}\r\n`);
      });

      test("an export the client abandons stops without harm", async () => {
        const controller = new AbortController();
        const res = await fetch(`${gw.origin}/api/console/records/export?view=year&format=csv`, {
          headers: { cookie: recOwner.cookie },
          signal: controller.signal,
        });
        const reader = res.body!.getReader();
        const first = await reader.read();
        assert.ok(first.value && first.value.length > 0);
        controller.abort();
        await reader.read().catch(() => undefined);
        // the gateway goes on answering
        assert.equal((await get("/records?limit=1", recOwner)).status, 200);
      });

      test("a member of another account cannot read or export these records", async () => {
        refused(await get(`/records?account=${recAccount}`, outsider), 404, "not_found");
        refused(await get(`/records/export?account=${recAccount}`, outsider), 404, "not_found");
        const own = await get("/records", outsider);
        assert.ok(!own.body.data.some((r: any) => today.includes(r.request_id)));
        const asAdmin = await get(`/records?account=${recAccount}&limit=500`, admin);
        assert.ok(today.every((id) => asAdmin.body.data.some((r: any) => r.request_id === id)));
      });
    });

    describe("tickets", () => {
      let ticketId: string;

      test("a member reports a problem from a call record: every field is kept", async () => {
        const call0 = await chat(key.secret, "broken mock:status=500");
        const record = (await get("/records?status=error", member)).body.data.find(
          (r: any) => r.request_id === call0.id,
        );
        const res = await call("POST", "/tickets", {
          cookie: member.cookie,
          body: {
            kind: "problem",
            subject: "Upstream error on a call",
            description: "It failed with 502.",
            problem_at: record.created_at,
            key_id: record.key_id,
            model: record.model,
            params: record.params,
            error: `${record.http_status} ${record.error_code}`,
            request_id: record.request_id,
          },
        });
        assert.equal(res.status, 201, res.text);
        const t = res.body.ticket;
        ticketId = t.id;
        assert.deepEqual(Object.keys(t).sort(), [
          "account_id",
          "account_name",
          "created_at",
          "created_by",
          "description",
          "error",
          "id",
          "key_id",
          "key_prefix",
          "kind",
          "model",
          "params",
          "problem_at",
          "request_id",
          "status",
          "subject",
          "updated_at",
        ]);
        assert.equal(t.status, "open");
        assert.equal(t.account_id, acme);
        assert.equal(t.account_name, "acme");
        assert.equal(t.kind, "problem");
        assert.equal(t.problem_at, record.created_at);
        assert.equal(t.key_id, key.id);
        assert.equal(t.key_prefix, record.key_prefix);
        assert.equal(t.model, TEST_MODEL);
        assert.deepEqual(t.params, record.params);
        assert.equal(t.error, "502 upstream_error");
        assert.equal(t.request_id, call0.id);
        assert.equal(t.created_by, member.id);

        await tick();
        const upgrade = await call("POST", "/tickets", {
          cookie: owner.cookie,
          body: {
            kind: "plan_upgrade",
            subject: "More tokens",
            description: "Please move us to a bigger plan.",
          },
        });
        assert.equal(upgrade.status, 201);
        assert.equal(upgrade.body.ticket.key_id, null);
      });

      test("bad tickets are 400s naming the field", async () => {
        const base = { kind: "problem", subject: "s", description: "d" };
        refused(
          await call("POST", "/tickets", { cookie: member.cookie, body: { ...base, kind: "rant" } }),
          400,
          "invalid_request",
          "kind",
        );
        refused(
          await call("POST", "/tickets", { cookie: member.cookie, body: { ...base, subject: "  " } }),
          400,
          "invalid_request",
          "subject",
        );
        refused(
          await call("POST", "/tickets", { cookie: member.cookie, body: { kind: "problem", subject: "s" } }),
          400,
          "invalid_request",
          "description",
        );
        refused(
          await call("POST", "/tickets", { cookie: member.cookie, body: { ...base, priority: 1 } }),
          400,
          "invalid_request",
          "priority",
        );
        refused(
          await call("POST", "/tickets", {
            cookie: member.cookie,
            body: { ...base, key_id: (await gw.key(other)).id },
          }),
          400,
          "invalid_request",
          "key_id",
        );
        refused(
          await call("POST", "/tickets", {
            cookie: member.cookie,
            body: { ...base, problem_at: "yesterday" },
          }),
          400,
          "invalid_request",
          "problem_at",
        );
      });

      test("the thread: replies by the account reopen, by an admin answer", async () => {
        const list = await get("/tickets", member);
        assert.equal(list.status, 200);
        assert.deepEqual(
          list.body.data.map((t: any) => t.kind),
          ["plan_upgrade", "problem"],
          "newest activity first",
        );
        refused(await get(`/tickets/${ticketId}`, outsider), 404, "not_found");
        refused(
          await call("POST", `/tickets/${ticketId}/messages`, {
            cookie: outsider.cookie,
            body: { body: "hi" },
          }),
          404,
          "not_found",
        );
        assert.deepEqual((await get("/tickets", outsider)).body.data, []);

        const adminList = await get("/tickets", admin);
        assert.ok(
          adminList.body.data.some((t: any) => t.id === ticketId),
          "an admin sees every account's tickets",
        );
        assert.deepEqual((await get(`/tickets?account=${other}`, admin)).body.data, []);

        await tick();
        let res = await call("POST", `/tickets/${ticketId}/messages`, {
          cookie: admin.cookie,
          body: { body: "Looking into it." },
        });
        assert.equal(res.status, 201, res.text);
        assert.deepEqual(Object.keys(res.body.message).sort(), [
          "author_email",
          "author_role",
          "body",
          "created_at",
          "id",
        ]);
        assert.equal(res.body.message.author_email, admin.email);
        assert.equal(res.body.message.author_role, "admin");
        let thread = await get(`/tickets/${ticketId}`, member);
        assert.equal(thread.body.ticket.status, "answered");
        assert.equal(
          (await get("/tickets", member)).body.data[0].id,
          ticketId,
          "the reply moved it to the top",
        );

        res = await call("POST", `/tickets/${ticketId}/messages`, {
          cookie: member.cookie,
          body: { body: "Thanks, still failing." },
        });
        assert.equal(res.status, 201);
        thread = await get(`/tickets/${ticketId}`, member);
        assert.equal(thread.body.ticket.status, "open");
        assert.deepEqual(
          thread.body.messages.map((m: any) => [m.author_email, m.author_role, m.body]),
          [
            [admin.email, "admin", "Looking into it."],
            [member.email, "member", "Thanks, still failing."],
          ],
        );
        refused(
          await call("POST", `/tickets/${ticketId}/messages`, { cookie: member.cookie, body: { body: "" } }),
          400,
          "invalid_request",
          "body",
        );
        refused(await get("/tickets/tkt_nope", member), 404, "not_found");
      });

      test("status: members may not change it, owners may close, admins may set any", async () => {
        refused(
          await call("PATCH", `/tickets/${ticketId}`, { cookie: member.cookie, body: { status: "closed" } }),
          403,
          "console_forbidden",
        );
        refused(
          await call("PATCH", `/tickets/${ticketId}`, { cookie: owner.cookie, body: { status: "answered" } }),
          403,
          "console_forbidden",
        );
        refused(
          await call("PATCH", `/tickets/${ticketId}`, {
            cookie: outsider.cookie,
            body: { status: "closed" },
          }),
          404,
          "not_found",
        );
        let res = await call("PATCH", `/tickets/${ticketId}`, {
          cookie: owner.cookie,
          body: { status: "closed" },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.ticket.status, "closed");
        assert.deepEqual(
          (await get("/tickets?status=closed", member)).body.data.map((t: any) => t.id),
          [ticketId],
        );
        res = await call("PATCH", `/tickets/${ticketId}`, { cookie: admin.cookie, body: { status: "open" } });
        assert.equal(res.body.ticket.status, "open");
        refused(
          await call("PATCH", `/tickets/${ticketId}`, { cookie: admin.cookie, body: { status: "done" } }),
          400,
          "invalid_request",
          "status",
        );
        refused(await get("/tickets?status=done", member), 400, "invalid_request", "status");
      });
    });

    describe("administration", () => {
      test("members and owners get console_forbidden on every admin call", async () => {
        for (const who of [member, owner]) {
          refused(await get("/admin/accounts", who), 403, "console_forbidden");
          refused(await get("/admin/users", who), 403, "console_forbidden");
          refused(await get("/admin/keys", who), 403, "console_forbidden");
          refused(
            await call("PATCH", `/admin/keys/${key.id}`, { cookie: who.cookie, body: { budget_nanos: 1 } }),
            403,
            "console_forbidden",
          );
          refused(
            await call("POST", "/admin/accounts", { cookie: who.cookie, body: { name: "x" } }),
            403,
            "console_forbidden",
          );
          refused(
            await call("PATCH", `/admin/accounts/${acme}`, { cookie: who.cookie, body: { disabled: true } }),
            403,
            "console_forbidden",
          );
          refused(
            await call("POST", "/admin/users", {
              cookie: who.cookie,
              body: { email: "x@y.z", account_id: acme, role: "admin", password: "12345678" },
            }),
            403,
            "console_forbidden",
          );
          refused(
            await call("PATCH", `/admin/users/${who.id}`, { cookie: who.cookie, body: { role: "admin" } }),
            403,
            "console_forbidden",
          );
        }
        assert.equal((await get("/me", owner)).body.user.role, "owner", "nothing changed");
      });

      test("accounts: list, create, change plan and quota, disable (refused on /v1 at once)", async () => {
        const list = await get("/admin/accounts", admin);
        assert.equal(list.status, 200);
        assert.ok(list.body.data.some((a: any) => a.id === acme && a.name === "acme"));
        const created = await call("POST", "/admin/accounts", {
          cookie: admin.cookie,
          body: { name: "newco", plan_id: "demo-only" },
        });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.body.account.plan_id, "demo-only");
        assert.equal(created.body.account.quota_tokens, 1_000_000);
        refused(
          await call("POST", "/admin/accounts", { cookie: admin.cookie, body: { name: "newco" } }),
          409,
          "conflict",
        );
        refused(
          await call("POST", "/admin/accounts", {
            cookie: admin.cookie,
            body: { name: "x", plan_id: "gold" },
          }),
          400,
          "invalid_request",
          "plan_id",
        );
        const id = created.body.account.id;
        let res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { plan_id: "default", quota_tokens: 777 },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.account.plan_id, "default");
        assert.equal(res.body.account.quota_tokens, 777);
        assert.equal(res.body.account.quota_source, "account");
        res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { quota_tokens: null },
        });
        assert.equal(res.body.account.quota_tokens, 1_000_000_000);
        assert.equal(res.body.account.quota_source, "plan");

        const k = await gw.key(id);
        secrets.push(k.secret);
        assert.equal((await v1Status(k.secret)).status, 200);
        res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { disabled: true },
        });
        assert.equal(res.body.account.disabled, true);
        assert.deepEqual(await v1Status(k.secret), { status: 403, code: "account_disabled" });
        res = await call("PATCH", `/admin/accounts/${id}`, {
          cookie: admin.cookie,
          body: { disabled: false },
        });
        assert.equal((await v1Status(k.secret)).status, 200);
        refused(
          await call("PATCH", "/admin/accounts/acc_nope", { cookie: admin.cookie, body: { disabled: true } }),
          404,
          "not_found",
        );
        refused(
          await call("PATCH", `/admin/accounts/${id}`, { cookie: admin.cookie, body: { name: "renamed" } }),
          400,
          "invalid_request",
          "name",
        );
      });

      describe("money budgets", () => {
        let spender: string;
        let spenderOwner: ConsoleSession;
        let wallet: { id: string; secret: string };
        /** what the key spent, by hand */
        let spent = 0;

        before(async () => {
          spender = await gw.account("spender");
          spenderOwner = await gw.consoleUser(spender, { role: "owner" });
          wallet = await gw.key(spender, { name: "wallet" });
          secrets.push(wallet.secret, spenderOwner.password, spenderOwner.cookie.split("=")[1]!);
          // seven prompt tokens, three of them cache reads, and ten of output
          const content = "pay for these five words mock:tokens=10 mock:cache";
          const paid = await chat(wallet.secret, content);
          assert.equal(paid.status, 200);
          spent = costOf(words(content), 10, 3);
          assert.equal(spent, 4 * 2_000 + 3 * 500 + 10 * 8_000);
          const record = (await get("/records", spenderOwner)).body.data[0];
          assert.deepEqual(
            [record.request_id, record.cached_tokens, record.cost_nanos, record.cost_usd, record.cost_source],
            [paid.id, 3, spent, 0.0000895, "config"],
          );
        });

        test("an admin sets a key's budget: the key's views show spent, left and the reset date", async () => {
          const listed = await get(`/admin/keys?account=${spender}`, admin);
          assert.equal(listed.status, 200, listed.text);
          assert.deepEqual(
            listed.body.data.map((k: any) => [
              k.id,
              k.account_id,
              k.account_name,
              k.spent_nanos,
              k.budget_nanos,
            ]),
            [[wallet.id, spender, "spender", spent, null]],
          );
          const all = await get("/admin/keys", admin);
          assert.ok(all.body.data.some((k: any) => k.id === key.id && k.account_name === "acme"));
          assert.ok(!JSON.stringify(all.body).includes(wallet.secret));

          const res = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_nanos: 5_000_000_000, budget_period: "month" },
          });
          assert.equal(res.status, 200, res.text);
          const expected = {
            budget_nanos: 5_000_000_000,
            budget_period: "month",
            spent_nanos: spent,
            left_nanos: 5_000_000_000 - spent,
            budget_resets_at: nextMonth(),
          };
          const pick = (k: any) => Object.fromEntries(Object.keys(expected).map((f) => [f, k[f]]));
          assert.deepEqual(pick(res.body.key), expected);
          assert.equal(res.body.key.account_name, "spender");
          // the owner's keys page reads the same
          const mine = (await get("/keys", spenderOwner)).body.data.find((k: any) => k.id === wallet.id);
          assert.deepEqual(pick(mine), expected);
          // the amount alone keeps the period; the period alone keeps the amount
          let patched = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_nanos: 7 },
          });
          assert.deepEqual([patched.body.key.budget_nanos, patched.body.key.budget_period], [7, "month"]);
          assert.equal(patched.body.key.left_nanos, 0, "never below 0");
          patched = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_period: "none" },
          });
          assert.deepEqual(
            [
              patched.body.key.budget_nanos,
              patched.body.key.budget_period,
              patched.body.key.budget_resets_at,
            ],
            [7, "none", null],
          );
          patched = await call("PATCH", `/admin/keys/${wallet.id}`, {
            cookie: admin.cookie,
            body: { budget_nanos: null },
          });
          assert.deepEqual(
            [patched.body.key.budget_nanos, patched.body.key.left_nanos, patched.body.key.spent_nanos],
            [null, null, spent],
          );
        });

        test("an admin sets an account's budget with its other settings; the overview shows it", async () => {
          const res = await call("PATCH", `/admin/accounts/${spender}`, {
            cookie: admin.cookie,
            body: { quota_tokens: 5000, budget_nanos: 25_000_000_000, budget_period: "month" },
          });
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.account.quota_tokens, 5000);
          const overview = (await get("/overview", spenderOwner)).body;
          assert.deepEqual(
            [
              overview.account.budget_nanos,
              overview.account.budget_period,
              overview.account.spent_nanos,
              overview.account.left_nanos,
              overview.account.budget_resets_at,
            ],
            [25_000_000_000, "month", spent, 25_000_000_000 - spent, nextMonth()],
          );
          assert.equal(overview.today.cost_nanos, spent);
          const listed = (await get("/admin/accounts", admin)).body.data.find((a: any) => a.id === spender);
          assert.equal(listed.left_nanos, 25_000_000_000 - spent);
          const cleared = await call("PATCH", `/admin/accounts/${spender}`, {
            cookie: admin.cookie,
            body: { budget_nanos: null, quota_tokens: null },
          });
          assert.deepEqual(
            [
              cleared.body.account.budget_nanos,
              cleared.body.account.budget_period,
              cleared.body.account.left_nanos,
            ],
            [null, "none", null],
          );
        });

        test("a budget set in the console refuses the next call on /v1 at once; removing it lifts that", async () => {
          for (const [path, body] of [
            [`/admin/keys/${wallet.id}`, { budget_nanos: spent, budget_period: "month" }],
            [`/admin/accounts/${spender}`, { budget_nanos: spent }],
          ] as const) {
            const set = await call("PATCH", path, { cookie: admin.cookie, body });
            assert.equal(set.status, 200, set.text);
            try {
              // no wait: this instance dropped its key cache
              const refusedCall = await chat(wallet.secret, "one more mock:tokens=1");
              assert.deepEqual([refusedCall.status, refusedCall.code], [429, "budget_exceeded"], path);
            } finally {
              const lifted = await call("PATCH", path, {
                cookie: admin.cookie,
                body: { budget_nanos: null },
              });
              assert.equal(lifted.status, 200);
            }
          }
          const again = await chat(wallet.secret, "and now mock:tokens=1");
          assert.equal(again.status, 200);
        });

        test("bad budgets are 400s naming the field, and change nothing", async () => {
          const bad: [string, unknown, string][] = [
            [`/admin/keys/${wallet.id}`, { budget_nanos: -1 }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: 1.5 }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: "5" }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: 9_000_000_000_000_001 }, "budget_nanos"],
            [`/admin/keys/${wallet.id}`, { budget_period: "week" }, "budget_period"],
            // a period needs an amount to apply to
            [`/admin/keys/${wallet.id}`, { budget_period: "month" }, "budget_period"],
            [`/admin/keys/${wallet.id}`, { budget_nanos: null, budget_period: "month" }, "budget_period"],
            [`/admin/keys/${wallet.id}`, { limit_tokens: 5 }, "limit_tokens"],
            [`/admin/accounts/${spender}`, { budget_nanos: -5 }, "budget_nanos"],
            [`/admin/accounts/${spender}`, { budget_period: "month" }, "budget_period"],
            [`/admin/accounts/${spender}`, { budget_usd: 5 }, "budget_usd"],
          ];
          for (const [path, body, param] of bad)
            refused(await call("PATCH", path, { cookie: admin.cookie, body }), 400, "invalid_request", param);
          refused(
            await call("PATCH", `/admin/keys/${wallet.id}`, { cookie: admin.cookie, body: {} }),
            400,
            "invalid_request",
          );
          refused(await get("/admin/keys?bogus=1", admin), 400, "invalid_request", "bogus");
          refused(
            await call("PATCH", "/admin/keys/key_nope", { cookie: admin.cookie, body: { budget_nanos: 1 } }),
            404,
            "not_found",
          );
          // owners manage their keys, but not their budgets
          refused(
            await call("PATCH", `/keys/${wallet.id}`, {
              cookie: spenderOwner.cookie,
              body: { budget_nanos: 1 },
            }),
            400,
            "invalid_request",
            "budget_nanos",
          );
          const k = (await get(`/admin/keys?account=${spender}`, admin)).body.data[0];
          assert.deepEqual([k.budget_nanos, k.budget_period], [null, "none"]);
          const a = (await get("/admin/accounts", admin)).body.data.find((x: any) => x.id === spender);
          assert.deepEqual([a.budget_nanos, a.budget_period], [null, "none"]);
        });
      });

      test("users: list, create (e-mail unique, role, password rules), change role, password, disable", async () => {
        const created = await call("POST", "/admin/users", {
          cookie: admin.cookie,
          body: {
            email: "New.Person@Example.Test",
            account_id: acme,
            role: "member",
            password: "first-password",
          },
        });
        assert.equal(created.status, 201, created.text);
        const u = created.body.user;
        assert.equal(u.email, "new.person@example.test");
        assert.equal(u.role, "member");
        assert.ok(!created.text.includes("first-password"));
        const cookie = await gw.consoleLogin("new.person@example.test", "first-password");
        secrets.push("first-password", cookie.split("=")[1]!);

        refused(
          await call("POST", "/admin/users", {
            cookie: admin.cookie,
            body: {
              email: "new.person@example.test",
              account_id: other,
              role: "member",
              password: "other-password",
            },
          }),
          409,
          "conflict",
        );
        const bad = { email: "b@example.test", account_id: acme, role: "member", password: "long-enough" };
        refused(
          await call("POST", "/admin/users", {
            cookie: admin.cookie,
            body: { ...bad, email: "not-an-email" },
          }),
          400,
          "invalid_request",
          "email",
        );
        refused(
          await call("POST", "/admin/users", { cookie: admin.cookie, body: { ...bad, role: "root" } }),
          400,
          "invalid_request",
          "role",
        );
        refused(
          await call("POST", "/admin/users", { cookie: admin.cookie, body: { ...bad, password: "short" } }),
          400,
          "invalid_request",
          "password",
        );
        refused(
          await call("POST", "/admin/users", {
            cookie: admin.cookie,
            body: { ...bad, account_id: "acc_nope" },
          }),
          400,
          "invalid_request",
          "account_id",
        );

        const list = await get("/admin/users", admin);
        assert.ok(list.body.data.some((x: any) => x.id === u.id));
        assert.ok(!list.text.includes("scrypt"), "no password hashes");
        const ofOther = await get(`/admin/users?account=${other}`, admin);
        assert.deepEqual(
          ofOther.body.data.map((x: any) => x.id),
          [outsider.id],
        );

        let res = await call("PATCH", `/admin/users/${u.id}`, {
          cookie: admin.cookie,
          body: { role: "owner" },
        });
        assert.equal(res.body.user.role, "owner");
        assert.equal(
          (await call("GET", "/me", { cookie })).body.user.role,
          "owner",
          "the session sees the new role at once",
        );
        // a new password ends the user's sessions
        res = await call("PATCH", `/admin/users/${u.id}`, {
          cookie: admin.cookie,
          body: { password: "second-password" },
        });
        assert.equal(res.status, 200);
        secrets.push("second-password");
        refused(await call("GET", "/me", { cookie }), 401, "console_unauthenticated");
        refused(
          await call("POST", "/login", { body: { email: u.email, password: "first-password" } }),
          401,
          "invalid_credentials",
        );
        const again = await gw.consoleLogin(u.email, "second-password");
        // disabling ends the sessions and refuses logins
        res = await call("PATCH", `/admin/users/${u.id}`, { cookie: admin.cookie, body: { disabled: true } });
        assert.equal(res.body.user.disabled, true);
        refused(await call("GET", "/me", { cookie: again }), 401, "console_unauthenticated");
        refused(
          await call("POST", "/login", { body: { email: u.email, password: "second-password" } }),
          401,
          "invalid_credentials",
        );

        refused(
          await call("PATCH", `/admin/users/${admin.id}`, { cookie: admin.cookie, body: { role: "member" } }),
          409,
          "conflict",
        );
        refused(
          await call("PATCH", `/admin/users/${admin.id}`, { cookie: admin.cookie, body: { disabled: true } }),
          409,
          "conflict",
        );
        refused(
          await call("PATCH", "/admin/users/usr_nope", { cookie: admin.cookie, body: { role: "member" } }),
          404,
          "not_found",
        );
        assert.equal((await get("/me", admin)).body.user.role, "admin");
      });
    });

    test("no password, cookie or key reached a log line", () => {
      const logs = gw.logs.join("");
      assert.ok(logs.length > 0);
      for (const s of secrets) assert.ok(!logs.includes(s), `a secret is in the logs: ${s.slice(0, 6)}…`);
    });

    // Last: it leaves the test client's address throttled for logins.
    // Was a lockout (5 failures refused the e-mail's right password from anywhere for 15
    // minutes); now the 5 are per e-mail and address and slow that address down (second
    // outside audit, item 4; test/login-throttle.test.ts has the reproducers).
    test("login limiting: 5 failures per e-mail and address, then 20 per address, answer 429 with retry-after", async () => {
      const victim = await gw.consoleUser(other, { role: "member" });
      for (let i = 0; i < 5; i++)
        refused(
          await call("POST", "/login", { body: { email: victim.email, password: `wrong-${i}` } }),
          401,
          "invalid_credentials",
        );
      // even the right password is refused now, from this address, for a second
      const limited = await call("POST", "/login", {
        body: { email: victim.email, password: victim.password },
      });
      refused(limited, 429, "login_rate_limited");
      const retry = Number(limited.headers.get("retry-after"));
      assert.ok(Number.isInteger(retry) && retry > 0 && retry <= 15 * 60, `retry-after ${retry}`);
      assert.equal(retry, 1, "the first wait of the backoff");
      // from another address the right password is let in: no lockout
      assert.equal(await loginFrom("127.0.0.2", victim.email, victim.password), 200);
      // the session the user already has keeps working
      assert.equal((await get("/me", victim)).status, 200);
      // Other e-mails from this address: after 20 failures (the suite made a few before this
      // test; one is forgotten every 15 minutes) every e-mail from it waits.
      let failures = 0;
      for (let i = 0; i < 20; i++) {
        const res = await call("POST", "/login", {
          body: { email: `spray${i}@example.test`, password: "guess-guess" },
        });
        if (res.status === 429) break;
        refused(res, 401, "invalid_credentials");
        failures++;
      }
      assert.ok(failures < 15, `the address was still allowed after ${5 + failures} failures`);
      const blocked = await call("POST", "/login", {
        body: { email: owner.email, password: owner.password },
      });
      refused(blocked, 429, "login_rate_limited");
      assert.ok(Number(blocked.headers.get("retry-after")) > 0);
    });
  });
}
