// The console API's tickets (src/http/routes/console/tickets.ts) over real HTTP on loopback,
// on SQLite and PostgreSQL: a problem reported from a call record, bad tickets, the thread
// (replies reopen or answer it), and who may set its status.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { consoleApiSuite, noSecretInTheLogs, refused, STORES, tick } from "./support/console-api.ts";
import { type ConsoleSession, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

for (const store of STORES) {
  describe(`console API (${store} store)`, await storeSuite(store), () => {
    const api = consoleApiSuite(store);
    const { call, get, chat } = api;
    let gw: TestGateway;
    let acme: string;
    let other: string;
    let owner: ConsoleSession;
    let member: ConsoleSession;
    let outsider: ConsoleSession;
    let admin: ConsoleSession;
    let key: { id: string; secret: string };
    before(() => {
      ({ gw, acme, other, owner, member, outsider, admin, key } = api);
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

    noSecretInTheLogs(api);
  });
}
