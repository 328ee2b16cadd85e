// The admin API (/admin/v1, src/http/routes/admin/) over real HTTP on loopback, on SQLite and
// PostgreSQL: who may call it (admin tokens of each scope, revoked ones, an admin's console
// session and its guards), every resource's happy path and bad input in the exact envelope, a
// key's allowed models enforced in every client API, the audit log's entries (and no secret in
// it), and every answer checked against the OpenAPI document the gateway serves.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import OpenAI, { NotFoundError } from "openai";
import { operations } from "../src/http/routes/admin/operations.ts";
import { ADMIN_RECORD_FIELDS } from "../src/records/queries.ts";
import { createTicket } from "../src/tickets/repository.ts";
import { type AdminApi, adminApiSuite, refused, suiteEnd } from "./support/admin-api.ts";
import { STORES } from "./support/console-api.ts";
import { TEST_MODEL } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

for (const store of STORES) {
  describe(`admin API (${store} store)`, await storeSuite(store), () => {
    const api: AdminApi = adminApiSuite(store);
    const { call, chat, secrets } = api;
    const db = () => api.gw.gateway.deps.store.db;

    describe("who may call it", () => {
      test("no credentials, an unknown token, a key, another scheme: admin_unauthenticated", async () => {
        for (const token of [null, "gwadmin-nope", `gwadmin-${"A".repeat(43)}`, api.key.secret])
          refused(await call("GET", "/accounts", { token }), 401, "admin_unauthenticated");
        const basic = await fetch(`${api.gw.origin}/admin/v1/accounts`, {
          headers: { authorization: "Basic YWRtaW46YWRtaW4=" },
        });
        assert.equal(basic.status, 401);
        refused(await call("GET", "/openapi.json", { token: null }), 401, "admin_unauthenticated");
      });

      test("read: every GET, no change; keys: accounts, keys, users, tickets; catalog: not those; full: tokens", async () => {
        const { read, keys, catalog, full } = api.tokens;
        for (const token of [read, keys, catalog, full]) {
          assert.equal((await call("GET", "/accounts", { token })).status, 200);
          assert.equal((await call("GET", "/admin-tokens", { token })).status, 200);
          assert.equal((await call("GET", "/audit-log", { token })).status, 200);
        }
        for (const token of [read, catalog]) {
          refused(await call("POST", "/accounts", { token, body: { name: "nope" } }), 403, "admin_forbidden");
          refused(
            await call("PATCH", `/keys/${api.key.id}`, { token, body: { disabled: true } }),
            403,
            "admin_forbidden",
          );
          refused(await call("DELETE", `/keys/${api.key.id}`, { token }), 403, "admin_forbidden");
        }
        const made = await call("POST", "/accounts", { token: keys, body: { name: "by-keys" } });
        assert.equal(made.status, 201, made.text);
        for (const token of [read, keys, catalog])
          refused(
            await call("POST", "/admin-tokens", { token, body: { name: "x", scopes: ["read"] } }),
            403,
            "admin_forbidden",
          );
        const full1 = await call("POST", "/admin-tokens", {
          token: full,
          body: { name: "x", scopes: ["read"] },
        });
        assert.equal(full1.status, 201, full1.text);
        secrets.push(full1.body.secret);
        assert.equal(
          (await chat(api.key.secret, "still works mock:tokens=1")).status,
          200,
          "nothing changed the key",
        );
      });

      test("the scope is checked before the body is read: a read token's broken JSON is admin_forbidden", async () => {
        refused(
          await call("POST", "/accounts", { token: api.tokens.read, raw: "{oops" }),
          403,
          "admin_forbidden",
        );
        refused(
          await call("POST", "/accounts", { token: api.tokens.full, raw: "{oops" }),
          400,
          "invalid_json",
        );
      });

      test("a revoked token is refused from its next call on; last_used_at records its use", async () => {
        const made = await call("POST", "/admin-tokens", { body: { name: "short-lived", scopes: ["read"] } });
        assert.equal(made.status, 201);
        const { secret, id } = made.body;
        secrets.push(secret);
        assert.match(secret, /^gwadmin-[A-Za-z0-9_-]{43}$/);
        assert.equal(made.body.prefix, secret.slice(0, made.body.prefix.length));
        assert.equal(made.body.last_used_at, null);
        assert.equal((await call("GET", "/accounts", { token: secret })).status, 200);
        const listed = (await call("GET", "/admin-tokens")).body.data.find((t: any) => t.id === id);
        assert.ok(listed.last_used_at > 0, "used once");
        assert.ok(!("secret" in listed));
        const revoked = await call("DELETE", `/admin-tokens/${id}`);
        assert.equal(revoked.status, 200, revoked.text);
        assert.ok(revoked.body.revoked_at > 0);
        refused(await call("GET", "/accounts", { token: secret }), 401, "admin_unauthenticated");
        const again = await call("DELETE", `/admin-tokens/${id}`);
        assert.equal(again.body.revoked_at, revoked.body.revoked_at, "revoking twice changes nothing");
        refused(await call("DELETE", "/admin-tokens/adm_nosuchtoken00"), 404, "not_found");
      });

      test("an admin's console session is scope full, with the console's Host and Origin guards", async () => {
        const { admin, member } = api;
        assert.equal((await call("GET", "/accounts", { token: null, cookie: admin.cookie })).status, 200);
        const patched = await call("PATCH", `/accounts/${api.other}`, {
          token: null,
          cookie: admin.cookie,
          body: { quota_tokens: 123_456 },
        });
        assert.equal(patched.status, 200, patched.text);
        refused(
          await call("PATCH", `/accounts/${api.other}`, {
            token: null,
            cookie: admin.cookie,
            origin: null,
            body: { quota_tokens: 1 },
          }),
          403,
          "origin_mismatch",
        );
        refused(
          await call("PATCH", `/accounts/${api.other}`, {
            token: null,
            cookie: admin.cookie,
            origin: "http://evil.example",
            body: { quota_tokens: 1 },
          }),
          403,
          "origin_mismatch",
        );
        refused(
          await call("GET", "/accounts", { token: null, cookie: admin.cookie, host: "evil.example" }),
          403,
          "host_not_allowed",
        );
        refused(
          await call("GET", "/accounts", { token: null, cookie: member.cookie }),
          403,
          "admin_forbidden",
        );
        refused(
          await call("GET", "/accounts", { token: null, cookie: `gw_session=${"x".repeat(43)}` }),
          401,
          "admin_unauthenticated",
        );
        const other = (await call("GET", `/accounts/${api.other}`)).body;
        assert.equal(other.quota_tokens, 123_456, "the refused changes changed nothing");
        // a token needs no Origin: browsers do not send it by themselves
        assert.equal(
          (
            await call("PATCH", `/accounts/${api.other}`, {
              origin: "http://evil.example",
              body: { quota_tokens: null },
            })
          ).status,
          200,
        );
      });
    });

    describe("accounts", () => {
      test("list, create, get, change; /v1 refuses a disabled account at once", async () => {
        const list = await call("GET", "/accounts");
        assert.equal(list.status, 200);
        assert.deepEqual(
          [list.body.object, list.body.has_more, list.body.next_cursor],
          ["list", false, null],
        );
        assert.ok(list.body.data.some((a: any) => a.id === api.acme && a.name === "acme"));
        const made = await call("POST", "/accounts", { body: { name: "newco", plan_id: "demo-only" } });
        assert.equal(made.status, 201, made.text);
        assert.equal(made.body.plan_id, "demo-only");
        assert.equal(made.body.quota_tokens, 1_000_000);
        assert.equal(made.body.quota_source, "plan");
        const id = made.body.id;
        assert.deepEqual((await call("GET", `/accounts/${id}`)).body, made.body);
        const key = await api.gw.key(id);
        secrets.push(key.secret);
        assert.equal((await chat(key.secret, "hi", "demo")).status, 200);
        const patched = await call("PATCH", `/accounts/${id}`, {
          body: {
            name: "newco-renamed",
            plan_id: "default",
            quota_tokens: 5000,
            budget_nanos: 2_000_000_000,
            budget_period: "month",
            disabled: true,
          },
        });
        assert.equal(patched.status, 200, patched.text);
        assert.equal(patched.body.name, "newco-renamed");
        assert.equal(patched.body.quota_source, "account");
        assert.equal(patched.body.quota_tokens, 5000);
        assert.equal(patched.body.budget_nanos, 2_000_000_000);
        assert.equal(patched.body.budget_period, "month");
        assert.equal(patched.body.left_nanos, 2_000_000_000);
        assert.ok(patched.body.budget_resets_at > Date.now());
        assert.equal(patched.body.disabled, true);
        assert.equal((await chat(key.secret, "hi", "demo")).code, "account_disabled");
        const back = await call("PATCH", `/accounts/${id}`, {
          body: { disabled: false, budget_nanos: null },
        });
        assert.equal(back.body.budget_period, "none", "removing the amount removes the period");
        assert.equal((await chat(key.secret, "hi", "demo")).status, 200);
      });

      test("bad input: unknown field or parameter, wrong type, unknown plan, taken name, empty change, not found", async () => {
        refused(
          await call("POST", "/accounts", { body: { name: "x1", nickname: "y" } }),
          400,
          "invalid_request",
          "nickname",
        );
        refused(await call("POST", "/accounts", { body: { name: 5 } }), 400, "invalid_request", "name");
        refused(await call("POST", "/accounts", { body: {} }), 400, "invalid_request", "name");
        refused(
          await call("POST", "/accounts", { body: { name: "x2", quota_tokens: "lots" } }),
          400,
          "invalid_request",
          "quota_tokens",
        );
        refused(
          await call("POST", "/accounts", { body: { name: "x3", plan_id: "gold" } }),
          400,
          "invalid_request",
          "plan_id",
        );
        refused(await call("POST", "/accounts", { body: { name: "acme" } }), 409, "conflict", "name");
        refused(await call("POST", "/accounts", { raw: "[1]" }), 400, "invalid_request");
        refused(await call("GET", "/accounts?limit=5"), 400, "invalid_request", "limit");
        refused(await call("PATCH", `/accounts/${api.acme}`, { body: {} }), 400, "invalid_request");
        refused(
          await call("PATCH", `/accounts/${api.acme}`, { body: { budget_period: "month" } }),
          400,
          "invalid_request",
          "budget_period",
        );
        refused(
          await call("PATCH", `/accounts/${api.acme}`, { body: { name: "other" } }),
          409,
          "conflict",
          "name",
        );
        refused(
          await call("PATCH", `/accounts/${api.acme}`, { body: { disabled: "no" } }),
          400,
          "invalid_request",
          "disabled",
        );
        refused(await call("GET", "/accounts/acc_nosuchaccount0"), 404, "not_found");
        refused(await call("GET", "/accounts/not%20an%20id"), 404, "not_found");
        refused(
          await call("PATCH", "/accounts/acc_nosuchaccount0", { body: { disabled: true } }),
          404,
          "not_found",
        );
        const acme = (await call("GET", `/accounts/${api.acme}`)).body;
        assert.equal(acme.name, "acme");
        assert.equal(acme.budget_nanos, null, "the refused budget left nothing behind");
      });
    });

    describe("keys", () => {
      test("create (the secret once) with every setting, list, get, change, delete", async () => {
        const made = await call("POST", "/keys", {
          body: {
            account_id: api.acme,
            name: "batch",
            limit_tokens: 100_000,
            rpm_limit: 60,
            tpm_limit: 50_000,
            allowed_models: ["demo"],
            budget_nanos: 5_000_000_000,
            budget_period: "month",
          },
        });
        assert.equal(made.status, 201, made.text);
        const k = made.body;
        secrets.push(k.secret);
        assert.match(k.secret, /^sk-[A-Za-z0-9]{43}$/);
        assert.deepEqual(
          [k.account_id, k.account_name, k.name, k.limit_tokens, k.rpm_limit, k.tpm_limit, k.allowed_models],
          [api.acme, "acme", "batch", 100_000, 60, 50_000, ["demo"]],
        );
        assert.deepEqual([k.budget_nanos, k.budget_period, k.disabled], [5_000_000_000, "month", false]);
        assert.equal((await chat(k.secret, "hi mock:tokens=1", "demo")).status, 200, "works at once");
        const got = await call("GET", `/keys/${k.id}`);
        const { secret: _, ...view } = k;
        assert.deepEqual(
          { ...got.body, used_tokens: 0, spent_nanos: 0, left_nanos: 0 },
          { ...view, left_nanos: 0 },
        );
        const listed = await call("GET", `/keys?account=${api.acme}`);
        assert.ok(listed.body.data.every((x: any) => x.account_id === api.acme));
        assert.ok(listed.body.data.some((x: any) => x.id === k.id));
        assert.ok(!listed.text.includes(k.secret), "the secret is shown once");
        assert.ok(
          (await call("GET", "/keys")).body.data.some((x: any) => x.account_id === api.other) === false,
        );
        const patched = await call("PATCH", `/keys/${k.id}`, {
          body: { rpm_limit: null, allowed_models: null, name: "batch-2", budget_nanos: null },
        });
        assert.equal(patched.status, 200, patched.text);
        assert.deepEqual(
          [
            patched.body.rpm_limit,
            patched.body.allowed_models,
            patched.body.name,
            patched.body.budget_period,
          ],
          [null, null, "batch-2", "none"],
        );
        assert.equal(patched.body.tpm_limit, 50_000, "what is not given stays");
        const off = await call("PATCH", `/keys/${k.id}`, { body: { disabled: true } });
        assert.equal(off.body.disabled, true);
        assert.equal((await chat(k.secret, "hi", "demo")).code, "key_disabled");
        const gone = await call("DELETE", `/keys/${k.id}`);
        assert.equal(gone.status, 204);
        assert.equal((await chat(k.secret, "hi", "demo")).code, "invalid_api_key");
        refused(await call("GET", `/keys/${k.id}`), 404, "not_found");
        refused(await call("DELETE", `/keys/${k.id}`), 404, "not_found");
        refused(await call("PATCH", `/keys/${k.id}`, { body: { disabled: false } }), 404, "not_found");
      });

      test("bad input: unknown account, a model outside the plan, unknown field, wrong type", async () => {
        refused(
          await call("POST", "/keys", { body: { account_id: "acc_nosuchaccount0" } }),
          400,
          "invalid_request",
          "account_id",
        );
        refused(await call("POST", "/keys", { body: {} }), 400, "invalid_request", "account_id");
        refused(
          await call("POST", "/keys", { body: { account_id: api.acme, allowed_models: ["demo", "gpt-9"] } }),
          400,
          "invalid_request",
          "allowed_models[1]",
        );
        refused(
          await call("POST", "/keys", { body: { account_id: api.acme, secret: "sk-mine" } }),
          400,
          "invalid_request",
          "secret",
        );
        refused(
          await call("POST", "/keys", { body: { account_id: api.acme, rpm_limit: 0 } }),
          400,
          "invalid_request",
          "rpm_limit",
        );
        refused(
          await call("POST", "/keys", { body: { account_id: api.acme, budget_period: "month" } }),
          400,
          "invalid_request",
          "budget_period",
        );
        refused(
          await call("PATCH", `/keys/${api.key.id}`, { body: { allowed_models: "demo" } }),
          400,
          "invalid_request",
          "allowed_models",
        );
        refused(await call("PATCH", `/keys/${api.key.id}`, { body: {} }), 400, "invalid_request");
        refused(await call("GET", "/keys?account=bad%20id"), 400, "invalid_request", "account");
        refused(await call("GET", "/keys/key_nosuchkey00000"), 404, "not_found");
      });

      test("allowed models: a model outside the key's list answers as one outside the plan, in every client API", async () => {
        const made = await call("POST", "/keys", {
          body: { account_id: api.acme, name: "demo-only", allowed_models: ["demo"] },
        });
        const { secret, id } = made.body;
        secrets.push(secret);
        const client = new OpenAI({ apiKey: secret, baseURL: api.gw.baseURL, maxRetries: 0 });
        const refusal = async (model: string) => {
          try {
            await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }] });
          } catch (err) {
            return err as NotFoundError;
          }
          assert.fail(`${model} was not refused`);
        };
        const outside = await refusal(TEST_MODEL);
        const unknown = await refusal("no-such-model");
        for (const err of [outside, unknown]) {
          assert.ok(err instanceof NotFoundError);
          assert.deepEqual(
            [err.status, err.code, err.type, err.param],
            [404, "model_not_found", "invalid_request_error", "model"],
          );
        }
        const answer = await client.chat.completions.create({
          model: "demo",
          messages: [{ role: "user", content: "hi" }],
        });
        assert.equal(answer.object, "chat.completion");
        assert.deepEqual(
          (await client.models.list()).data.map((m) => m.id),
          ["demo"],
        );
        await assert.rejects(
          client.models.retrieve(TEST_MODEL),
          (err: any) => err.status === 404 && err.code === "model_not_found",
        );
        assert.equal((await client.models.retrieve("demo")).id, "demo");

        const post = (path: string, body: unknown, headers: Record<string, string>) =>
          fetch(`${api.gw.origin}${path}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...headers },
            body: JSON.stringify(body),
          });
        const messages = (model: string) =>
          post(
            "/v1/messages",
            { model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] },
            { "x-api-key": secret, "anthropic-version": "2023-06-01" },
          );
        const [mOutside, mUnknown] = [await messages(TEST_MODEL), await messages("no-such-model")];
        assert.equal(mOutside.status, 404);
        const [bOutside, bUnknown] = [(await mOutside.json()) as any, (await mUnknown.json()) as any];
        assert.equal(bOutside.error.type, "not_found_error");
        assert.deepEqual(Object.keys(bOutside).sort(), Object.keys(bUnknown).sort());
        assert.equal(bOutside.error.type, bUnknown.error.type);
        assert.equal((await messages("demo")).status, 200);
        const count = await post(
          "/v1/messages/count_tokens",
          { model: TEST_MODEL, messages: [{ role: "user", content: "hi" }] },
          { "x-api-key": secret, "anthropic-version": "2023-06-01" },
        );
        assert.equal(count.status, 404);

        const responses = (model: string) =>
          post("/v1/responses", { model, input: "hi" }, { authorization: `Bearer ${secret}` });
        const rOutside = await responses(TEST_MODEL);
        assert.equal(rOutside.status, 404);
        assert.equal(((await rOutside.json()) as any).error.code, "model_not_found");
        assert.equal((await responses("demo")).status, 200);

        // the list changed: the next call sees it, no wait
        await call("PATCH", `/keys/${id}`, { body: { allowed_models: [TEST_MODEL, "demo"] } });
        const now = await client.chat.completions.create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi mock:tokens=1" }],
        });
        assert.equal(now.object, "chat.completion");
        assert.deepEqual(
          (await client.models.list()).data.map((m) => m.id).sort(),
          ["demo", TEST_MODEL].sort(),
        );
      });
    });

    describe("users", () => {
      test("create, list, get, change; a new password ends the user's sessions", async () => {
        const password = `pw-${Math.random().toString(36).slice(2)}-long`;
        secrets.push(password);
        const made = await call("POST", "/users", {
          body: { email: "Owner@Example.test", account_id: api.acme, role: "owner", password },
        });
        assert.equal(made.status, 201, made.text);
        assert.deepEqual(
          [made.body.email, made.body.role, made.body.account_id, made.body.disabled],
          ["owner@example.test", "owner", api.acme, false],
        );
        const cookie = await api.gw.consoleLogin("owner@example.test", password);
        assert.deepEqual((await call("GET", `/users/${made.body.id}`)).body, made.body);
        const listed = await call("GET", `/users?account=${api.acme}`);
        assert.ok(listed.body.data.every((u: any) => u.account_id === api.acme));
        assert.ok(listed.body.data.some((u: any) => u.id === made.body.id));
        const newPassword = `pw-${Math.random().toString(36).slice(2)}-new`;
        secrets.push(newPassword);
        const patched = await call("PATCH", `/users/${made.body.id}`, {
          body: { role: "member", password: newPassword },
        });
        assert.equal(patched.status, 200, patched.text);
        assert.equal(patched.body.role, "member");
        const me = await fetch(`${api.gw.origin}/api/console/me`, { headers: { cookie } });
        assert.equal(me.status, 401, "the session ended with the new password");
        assert.equal(
          (await call("PATCH", `/users/${made.body.id}`, { body: { disabled: true } })).body.disabled,
          true,
        );
      });

      test("bad input: taken e-mail, short password, unknown account or role, unknown field; not found; no self-demotion", async () => {
        const body = {
          email: api.member.email,
          account_id: api.acme,
          role: "member",
          password: "long-enough-1",
        };
        refused(await call("POST", "/users", { body }), 409, "conflict");
        refused(
          await call("POST", "/users", { body: { ...body, email: "a@b.c", password: "short" } }),
          400,
          "invalid_request",
          "password",
        );
        refused(
          await call("POST", "/users", {
            body: { ...body, email: "a@b.c", account_id: "acc_nosuchaccount0" },
          }),
          400,
          "invalid_request",
          "account_id",
        );
        refused(
          await call("POST", "/users", { body: { ...body, email: "a@b.c", role: "root" } }),
          400,
          "invalid_request",
          "role",
        );
        refused(
          await call("POST", "/users", { body: { ...body, email: "not an email" } }),
          400,
          "invalid_request",
          "email",
        );
        refused(
          await call("PATCH", `/users/${api.member.id}`, { body: { password_hash: "x" } }),
          400,
          "invalid_request",
          "password_hash",
        );
        refused(
          await call("PATCH", "/users/usr_nosuchuser000", { body: { disabled: true } }),
          404,
          "not_found",
        );
        refused(await call("GET", "/users/usr_nosuchuser000"), 404, "not_found");
        refused(
          await call("PATCH", `/users/${api.admin.id}`, {
            token: null,
            cookie: api.admin.cookie,
            body: { role: "member" },
          }),
          409,
          "conflict",
        );
      });
    });

    describe("records and usage", () => {
      let otherKey: { id: string; secret: string };
      let ids: string[];
      let failed: string;
      let started: number;
      before(async () => {
        started = Date.now();
        otherKey = await api.gw.key(api.other, { name: "theirs" });
        secrets.push(otherKey.secret);
        ids = [];
        for (const text of ["one mock:tokens=3", "two mock:tokens=4", "three mock:tokens=5"]) {
          ids.push((await chat(api.key.secret, text)).id);
          await tick();
        }
        failed = (await chat(api.key.secret, "fails mock:status=500")).id;
        await tick();
        ids.push((await chat(otherKey.secret, "theirs mock:tokens=2")).id);
      });

      test("every account's records, newest first, in pages; filters by account, key, model, status, request, api, time", async () => {
        const all = await call("GET", `/records?from=${started}`);
        assert.equal(all.status, 200, all.text);
        assert.deepEqual(
          all.body.data.map((r: any) => r.request_id),
          [ids[3], failed, ids[2], ids[1], ids[0]],
        );
        assert.equal(all.body.data[0].account_id, api.other);
        assert.equal(all.body.data[0].provider, "mock");
        assert.equal(all.body.data[0].upstream_model, "mock-model");
        const acme = await call("GET", `/records?from=${started}&account=${api.acme}`);
        assert.ok(acme.body.data.every((r: any) => r.account_id === api.acme));
        assert.equal(acme.body.data.length, 4);
        // pages of two: the same records, none twice
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page: any = await call(
            "GET",
            `/records?from=${started}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
          );
          assert.ok(page.body.data.length <= 2);
          seen.push(...page.body.data.map((r: any) => r.request_id));
          cursor = page.body.next_cursor;
          assert.equal(page.body.has_more, cursor !== null);
        } while (cursor);
        assert.deepEqual(
          seen,
          all.body.data.map((r: any) => r.request_id),
        );
        const one = await call("GET", `/records?request_id=${failed}`);
        assert.deepEqual(
          one.body.data.map((r: any) => [r.request_id, r.status, r.error_code]),
          [[failed, "error", "upstream_error"]],
        );
        assert.equal((await call("GET", `/records?from=${started}&status=error`)).body.data.length, 1);
        assert.equal((await call("GET", `/records?from=${started}&key=${otherKey.id}`)).body.data.length, 1);
        assert.equal((await call("GET", `/records?from=${started}&model=demo`)).body.data.length, 0);
        assert.equal(
          (await call("GET", `/records?from=${started}&api=chat.completions`)).body.data.length,
          5,
        );
        assert.equal((await call("GET", `/records?from=${started}&api=messages`)).body.data.length, 0);
        const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
        const today = new Date().toISOString().slice(0, 10);
        assert.equal((await call("GET", `/records?from=${tomorrow}`)).body.data.length, 0);
        assert.ok((await call("GET", `/records?from=${today}&to=${tomorrow}`)).body.data.length >= 5);
        const iso = new Date(started).toISOString();
        assert.equal(
          (
            await call(
              "GET",
              `/records?from=${encodeURIComponent(iso)}&to=${ids.length ? Date.now() + 1 : 0}`,
            )
          ).body.data.length,
          5,
        );
        assert.equal(
          (await call("GET", `/records?from=${started}&to=${started}`)).body.data.length,
          0,
          "to is exclusive",
        );
      });

      test("an account's agent sessions (test/sessions.test.ts has the rest): none for calls that name none", async () => {
        const res = await call("GET", `/sessions?account=${api.other}`);
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, { object: "list", data: [], has_more: false, next_cursor: null });
        refused(
          await call("GET", `/sessions?account=${api.acme}&cursor=nonsense`),
          400,
          "invalid_request",
          "cursor",
        );
      });

      test("bad filters: limit, cursor, date, status, unknown parameter", async () => {
        refused(await call("GET", "/records?limit=0"), 400, "invalid_request", "limit");
        refused(await call("GET", "/records?limit=501"), 400, "invalid_request", "limit");
        refused(await call("GET", "/records?cursor=nonsense"), 400, "invalid_request", "cursor");
        refused(await call("GET", "/records?from=2026-02-30"), 400, "invalid_request", "from");
        refused(await call("GET", "/records?to=yesterday"), 400, "invalid_request", "to");
        refused(await call("GET", "/records?status=fine"), 400, "invalid_request", "status");
        refused(await call("GET", "/records?view=today"), 400, "invalid_request", "view");
        refused(await call("GET", "/records/export?format=xml"), 400, "invalid_request", "format");
      });

      test("export: CSV (the console's columns, then the account and deployment) and JSON Lines, with the filters", async () => {
        const csv = await call("GET", `/records/export?from=${started}&account=${api.acme}`);
        assert.equal(csv.status, 200);
        assert.match(csv.headers.get("content-type")!, /^text\/csv/);
        assert.match(
          csv.headers.get("content-disposition")!,
          /^attachment; filename="records-\d{4}-\d{2}-\d{2}\.csv"$/,
        );
        const lines = csv.text.split("\r\n").filter(Boolean);
        assert.equal(lines[0], ADMIN_RECORD_FIELDS.join(","));
        assert.ok(
          lines[0]!.endsWith(
            ",api,account_id,account_name,provider,upstream_model,session_id,session_client",
          ),
        );
        assert.equal(lines.length, 5);
        assert.ok(lines.slice(1).every((l) => l.includes(`,${api.acme},`)));
        const jsonl = await call("GET", `/records/export?from=${started}&format=jsonl`);
        assert.match(jsonl.headers.get("content-type")!, /^application\/x-ndjson/);
        const rows = jsonl.text
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l));
        assert.deepEqual(
          rows.map((r) => r.request_id),
          [ids[3], failed, ids[2], ids[1], ids[0]],
        );
        assert.ok(!csv.text.includes(api.key.secret) && !jsonl.text.includes(otherKey.secret));
      });

      test("usage: grouped by each dimension, summing what the records hold", async () => {
        const from = started;
        const to = Date.now() + 1;
        const records = await db()
          .selectFrom("call_records")
          .selectAll()
          .where("created_at", ">=", from)
          .where("created_at", "<", to)
          .execute();
        const sum = (f: (r: (typeof records)[number]) => number) => records.reduce((n, r) => n + f(r), 0);
        const byAccount = await call("GET", `/usage?group_by=account&from=${from}&to=${to}`);
        assert.equal(byAccount.status, 200, byAccount.text);
        assert.deepEqual(
          [byAccount.body.object, byAccount.body.group_by, byAccount.body.from, byAccount.body.to],
          ["list", "account", from, to],
        );
        const acme = byAccount.body.data.find((g: any) => g.group === api.acme);
        assert.equal(acme.label, "acme");
        assert.equal(acme.calls, 4);
        assert.equal(acme.errors, 1);
        assert.equal(byAccount.body.data[0].group, api.acme, "busiest first");
        const other = byAccount.body.data.find((g: any) => g.group === api.other);
        assert.equal(other.calls, 1);
        for (const group of ["model", "provider", "account", "key", "day", "hour", "status"]) {
          const res = await call("GET", `/usage?group_by=${group}&from=${from}&to=${to}`);
          const data: any[] = res.body.data;
          const total = (f: string) => data.reduce((n, g) => n + g[f], 0);
          assert.equal(total("calls"), records.length, group);
          assert.equal(
            total("total_tokens"),
            sum((r) => Number(r.total_tokens)),
            group,
          );
          assert.equal(
            total("prompt_tokens"),
            sum((r) => Number(r.prompt_tokens)),
            group,
          );
          assert.equal(
            total("cost_nanos"),
            sum((r) => Number(r.cost_nanos)),
            group,
          );
          assert.equal(total("errors"), 1, group);
          assert.ok(data.every((g) => g.avg_latency_ms === null || Number.isInteger(g.avg_latency_ms)));
        }
        const day = (await call("GET", `/usage?group_by=day&from=${from}&to=${to}`)).body.data;
        assert.ok(day.every((g: any) => /^\d{4}-\d{2}-\d{2}$/.test(g.group)));
        const hour = (await call("GET", `/usage?group_by=hour&from=${from}&to=${to}`)).body.data;
        assert.ok(hour.every((g: any) => /^\d{4}-\d{2}-\d{2}T\d{2}:00Z$/.test(g.group)));
        const keys = (await call("GET", `/usage?group_by=key&from=${from}&to=${to}`)).body.data;
        assert.equal(keys.find((g: any) => g.group === api.key.id).label, "app-one");
        const provider = (
          await call("GET", `/usage?group_by=provider&from=${from}&to=${to}&account=${api.other}`)
        ).body;
        assert.deepEqual(
          provider.data.map((g: any) => [g.group, g.calls]),
          [["mock", 1]],
        );
        const status = (await call("GET", `/usage?group_by=status&from=${from}&to=${to}&model=${TEST_MODEL}`))
          .body;
        assert.deepEqual(
          status.data.map((g: any) => [g.group, g.calls]),
          [
            ["ok", 4],
            ["error", 1],
          ],
        );
        const cut = await call("GET", `/usage?group_by=account&from=${from}&to=${to}&limit=1`);
        assert.deepEqual([cut.body.data.length, cut.body.has_more], [1, true]);
        const defaults = await call("GET", "/usage");
        assert.equal(defaults.body.group_by, "day");
        assert.equal(defaults.body.to - defaults.body.from, 30 * 86_400_000);
        refused(await call("GET", "/usage?group_by=week"), 400, "invalid_request", "group_by");
        refused(await call("GET", "/usage?limit=10001"), 400, "invalid_request", "limit");
      });
    });

    describe("tickets", () => {
      test("list, get, reply as support (a token's reply shows as an admin's), set the status", async () => {
        const ticket = await createTicket(db(), {
          account_id: api.acme,
          kind: "problem",
          subject: "slow answers",
          description: "since noon",
          created_by: api.member.id,
        });
        const list = await call("GET", "/tickets");
        assert.ok(list.body.data.some((t: any) => t.id === ticket.id));
        assert.equal(list.body.has_more, false);
        assert.ok(
          !(await call("GET", `/tickets?account=${api.other}`)).body.data.some(
            (t: any) => t.id === ticket.id,
          ),
        );
        assert.ok((await call("GET", "/tickets?status=open")).body.data.some((t: any) => t.id === ticket.id));
        const got = await call("GET", `/tickets/${ticket.id}`);
        assert.deepEqual(got.body.messages, []);
        assert.equal(got.body.subject, "slow answers");
        const reply = await call("POST", `/tickets/${ticket.id}/messages`, {
          token: api.tokens.keys,
          body: { body: "looking" },
        });
        assert.equal(reply.status, 201, reply.text);
        assert.deepEqual(
          [reply.body.author_role, reply.body.author_email, reply.body.body],
          ["admin", null, "looking"],
        );
        const bySession = await call("POST", `/tickets/${ticket.id}/messages`, {
          token: null,
          cookie: api.admin.cookie,
          body: { body: "fixed" },
        });
        assert.equal(bySession.body.author_email, api.admin.email);
        const thread = await call("GET", `/tickets/${ticket.id}`);
        assert.equal(thread.body.status, "answered");
        assert.deepEqual(
          thread.body.messages.map((m: any) => m.body),
          ["looking", "fixed"],
        );
        const closed = await call("PATCH", `/tickets/${ticket.id}`, { body: { status: "closed" } });
        assert.equal(closed.status, 200);
        assert.equal(closed.body.status, "closed");
        refused(
          await call("PATCH", `/tickets/${ticket.id}`, { body: { status: "done" } }),
          400,
          "invalid_request",
          "status",
        );
        refused(
          await call("POST", `/tickets/${ticket.id}/messages`, { body: { body: "" } }),
          400,
          "invalid_request",
          "body",
        );
        refused(await call("GET", "/tickets/tkt_nosuchticket0"), 404, "not_found");
        refused(
          await call("PATCH", "/tickets/tkt_nosuchticket0", { body: { status: "open" } }),
          404,
          "not_found",
        );
        refused(await call("GET", "/tickets?status=pending"), 400, "invalid_request", "status");
      });
    });

    describe("admin tokens", () => {
      test("create (the token once), list, bad scopes", async () => {
        const made = await call("POST", "/admin-tokens", {
          body: { name: "ci", scopes: ["keys", "read", "keys"] },
        });
        assert.equal(made.status, 201);
        secrets.push(made.body.secret);
        assert.deepEqual(made.body.scopes, ["read", "keys"]);
        assert.equal(made.body.created_by, `token:${api.tokenIds.full}`);
        const list = await call("GET", "/admin-tokens");
        const listed = list.body.data.find((t: any) => t.id === made.body.id);
        const { secret: _, ...view } = made.body;
        assert.deepEqual(listed, view);
        assert.ok(!list.text.includes(made.body.secret));
        refused(
          await call("POST", "/admin-tokens", { body: { name: "x", scopes: [] } }),
          400,
          "invalid_request",
          "scopes",
        );
        refused(
          await call("POST", "/admin-tokens", { body: { name: "x", scopes: ["root"] } }),
          400,
          "invalid_request",
          "scopes[0]",
        );
        refused(
          await call("POST", "/admin-tokens", { body: { scopes: ["read"] } }),
          400,
          "invalid_request",
          "name",
        );
        const stored = await db()
          .selectFrom("admin_tokens")
          .selectAll()
          .where("id", "=", made.body.id)
          .executeTakeFirstOrThrow();
        assert.notEqual(stored.secret_hash, made.body.secret);
        assert.ok(
          !Object.values(stored).some((v) => String(v).includes(made.body.secret.slice(14))),
          "only the hash is stored",
        );
      });
    });

    describe("audit log", () => {
      test("every change: who, what, when, before and after; filters and pages", async () => {
        const made = await call("POST", "/keys", {
          body: { account_id: api.other, name: "audited", limit_tokens: 10 },
        });
        secrets.push(made.body.secret);
        await tick();
        await call("PATCH", `/keys/${made.body.id}`, { token: api.tokens.keys, body: { limit_tokens: 20 } });
        await tick();
        await call("DELETE", `/keys/${made.body.id}`, { token: null, cookie: api.admin.cookie });
        const log = await call("GET", `/audit-log?resource=keys&resource_id=${made.body.id}`);
        assert.equal(log.status, 200);
        const entries = log.body.data;
        assert.deepEqual(
          entries.map((e: any) => [e.action, e.actor]),
          [
            ["delete", `user:${api.admin.email}`],
            ["update", `token:${api.tokenIds.keys}`],
            ["create", `token:${api.tokenIds.full}`],
          ],
        );
        const [deleted, updated, created] = entries;
        assert.equal(created.before, null);
        assert.equal(created.after.limit_tokens, 10);
        assert.equal(created.after.name, "audited");
        assert.deepEqual([updated.before.limit_tokens, updated.after.limit_tokens], [10, 20]);
        assert.equal(deleted.after, null);
        assert.equal(deleted.before.limit_tokens, 20);
        assert.ok(created.created_at <= updated.created_at && updated.created_at <= deleted.created_at);
        const page1 = await call("GET", `/audit-log?resource=keys&resource_id=${made.body.id}&limit=2`);
        assert.equal(page1.body.has_more, true);
        const page2 = await call(
          "GET",
          `/audit-log?resource=keys&resource_id=${made.body.id}&limit=2&cursor=${page1.body.next_cursor}`,
        );
        assert.deepEqual(
          [...page1.body.data, ...page2.body.data].map((e: any) => e.id),
          entries.map((e: any) => e.id),
        );
        assert.equal(page2.body.has_more, false);
        const bySession = await call(
          "GET",
          `/audit-log?actor=${encodeURIComponent(`user:${api.admin.email}`)}`,
        );
        assert.ok(bySession.body.data.length >= 2);
        assert.ok(bySession.body.data.every((e: any) => e.actor === `user:${api.admin.email}`));
        assert.equal((await call("GET", `/audit-log?from=${Date.now() + 60_000}`)).body.data.length, 0);
        const accounts = await call("GET", "/audit-log?resource=accounts");
        assert.ok(accounts.body.data.some((e: any) => e.action === "update" && e.before && e.after));
        const users = await call("GET", "/audit-log?resource=users");
        const passwordChange = users.body.data.find((e: any) => e.after?.password_changed);
        assert.ok(passwordChange, "a password change is recorded as such");
        assert.ok(
          (await call("GET", "/audit-log?resource=tickets")).body.data.some((e: any) => e.action === "reply"),
        );
        const tokens = await call("GET", "/audit-log?resource=admin-tokens");
        assert.ok(tokens.body.data.some((e: any) => e.action === "revoke"));
        refused(await call("GET", "/audit-log?limit=501"), 400, "invalid_request", "limit");
        refused(await call("GET", "/audit-log?cursor=x"), 400, "invalid_request", "cursor");
      });

      test("no key secret, admin token, password or hash anywhere in the audit log", async () => {
        const rows = await db().selectFrom("audit_log").selectAll().execute();
        assert.ok(rows.length > 10);
        const text = JSON.stringify(rows);
        for (const s of secrets)
          assert.ok(!text.includes(s), `a secret is in the audit log: ${s.slice(0, 10)}…`);
        const hashes = await db().selectFrom("users").select("password_hash").execute();
        const keyHashes = await db().selectFrom("api_keys").select("secret_hash").execute();
        const tokenHashes = await db().selectFrom("admin_tokens").select("secret_hash").execute();
        for (const h of [
          ...hashes.map((r) => r.password_hash),
          ...keyHashes.map((r) => r.secret_hash),
          ...tokenHashes.map((r) => r.secret_hash),
        ])
          assert.ok(!text.includes(h), "a hash is in the audit log");
        assert.ok(!/secret|password_hash|scrypt\$/.test(text));
      });
    });

    describe("the OpenAPI document", () => {
      test("describes every operation, the catalog's too, with a scope each", () => {
        const doc = api.document;
        assert.equal(doc.openapi, "3.1.0");
        const ids = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((ops) =>
          Object.values(ops).map((op) => op.operationId),
        );
        for (const id of Object.keys(operations)) assert.ok(ids.includes(id), id);
        for (const path of [
          "/providers",
          "/providers/{id}",
          "/providers/{id}/test",
          "/providers/{id}/keys",
          "/models",
          "/models/{id}",
          "/plans",
          "/plans/{id}",
        ])
          assert.ok(doc.paths[path], path);
        for (const ops of Object.values(doc.paths as Record<string, Record<string, any>>))
          for (const op of Object.values(ops)) {
            assert.ok(["read", "keys", "catalog", "full"].includes(op["x-scope"]), op.operationId);
            assert.ok(op.responses["401"] && op.responses["403"], op.operationId);
          }
        assert.equal(doc.paths["/providers"].post["x-scope"], "catalog");
        assert.equal(doc.paths["/providers/{id}/test"].post["x-scope"], "catalog");
        assert.equal(doc.paths["/providers/{id}/keys"].get["x-scope"], "read");
        assert.equal(doc.paths["/admin-tokens"].post["x-scope"], "full");
        assert.equal(doc.paths["/accounts/{id}"].patch["x-scope"], "keys");
      });
    });

    // the catalog's own suite (test/admin-catalog.test.ts) answers getCatalog, on a store-managed catalog
    suiteEnd(api, { operations: Object.keys(operations).filter((id) => id !== "getCatalog") });
  });
}
