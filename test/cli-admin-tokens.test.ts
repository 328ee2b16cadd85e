// `admin-tokens create | list | revoke` and `keys create --models` / `keys set-models` as
// operators run them: `node src/main.ts …` in a child process against the store of a running
// gateway (SQLite and PostgreSQL), and what they made used on that gateway at once: a token on
// the admin API (refused from the moment it is revoked), a key's models on /v1.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { type CliResult, runCli } from "./support/cli.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { storeSuite } from "./support/postgres.ts";

const CONFIG_YAML = `providers:
  - id: demo
    type: demo
models:
  - id: demo
    provider: demo
  - id: demo-2
    provider: demo
plans:
  - id: default
    quota_tokens: 1000000
    models: [demo, demo-2]
`;

let workDir: string;

before(() => {
  workDir = mkdtempSync(join(tmpdir(), "gw-cli-admin-"));
});

after(() => {
  rmSync(workDir, { recursive: true, force: true });
});

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`admin-tokens and key models CLI (${kind})`, await storeSuite(kind), () => {
    let gw: TestGateway;
    let env: Record<string, string>;
    let acme: string;
    const secrets: string[] = [];

    const run = (args: string[]): Promise<CliResult> => runCli(args, env, { cwd: workDir });

    async function ok(args: string[]): Promise<any> {
      const r = await run([...args, "--json"]);
      assert.equal(r.code, 0, `${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
      assert.notEqual(r.json, undefined, r.stdout);
      return r.json;
    }

    async function fails(args: string[], code: number, message: RegExp): Promise<void> {
      const r = await run([...args, "--json"]);
      assert.equal(r.code, code, `${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
      assert.match(r.json?.error?.message ?? "", message);
    }

    const admin = (token: string, method = "GET", path = "/accounts", body?: unknown) =>
      fetch(`${gw.origin}/admin/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });

    const chat = async (secret: string, model: string) => {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
      });
      const body = (await res.json()) as any;
      return { status: res.status, code: body?.error?.code as string | undefined };
    };

    /** Polls until `probe` says yes: the CLI's key changes reach a running gateway within a poll. */
    async function eventually(what: string, probe: () => Promise<boolean>): Promise<void> {
      const deadline = Date.now() + 3_000;
      while (!(await probe())) {
        if (Date.now() > deadline) assert.fail(`${what}: not after 3 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    before(async () => {
      gw = await startTestGateway({
        store: kind,
        config: {
          models: [
            { id: "demo", provider: "demo" },
            { id: "demo-2", provider: "demo" },
          ],
          plans: [{ id: "default", quota_tokens: 1_000_000, models: ["demo", "demo-2"] }],
        },
      });
      const store = gw.gateway.deps.config.store;
      const config = join(workDir, `${kind}.yaml`);
      writeFileSync(config, CONFIG_YAML);
      env = { GATEWAY_CONFIG: config, GATEWAY_DATA_DIR: store.data_dir };
      if (store.database_url) env.DATABASE_URL = store.database_url;
      acme = await gw.account("acme");
    });

    after(async () => {
      await gw?.close();
    });

    test("create --json: the token once, with its scopes; it works on the running gateway within them", async () => {
      const t = await ok(["admin-tokens", "create", "--name", "ops", "--scope", "read", "--scope", "keys"]);
      secrets.push(t.secret);
      assert.match(t.id, /^adm_[0-9A-Za-z]{14}$/);
      assert.match(t.secret, /^gwadmin-[A-Za-z0-9_-]{43}$/);
      assert.equal(t.prefix, t.secret.slice(0, t.prefix.length));
      assert.deepEqual(t.scopes, ["read", "keys"]);
      assert.equal(t.created_by, "cli");
      assert.equal(t.revoked_at, null);
      assert.equal((await admin(t.secret)).status, 200);
      const forbidden = await admin(t.secret, "POST", "/admin-tokens", { name: "x", scopes: ["full"] });
      assert.equal(forbidden.status, 403);
      assert.equal(((await forbidden.json()) as any).error.code, "admin_forbidden");
      const list = await ok(["admin-tokens", "list"]);
      const listed = list.find((x: any) => x.id === t.id);
      assert.ok(listed.last_used_at, "its use is recorded");
      assert.ok(!JSON.stringify(list).includes(t.secret), "the token is shown only once");
    });

    test("create without --json prints the token once and says so; list prints its prefix only", async () => {
      const r = await run(["admin-tokens", "create", "--name", "human", "--scope", "full"]);
      assert.equal(r.code, 0, r.stderr);
      const token = /gwadmin-[A-Za-z0-9_-]{43}/.exec(r.stdout)?.[0];
      assert.ok(token, r.stdout);
      secrets.push(token);
      assert.equal(r.stdout.split(token).length, 2, "printed once");
      assert.match(r.stdout, /shown this once/);
      const list = await run(["admin-tokens", "list"]);
      assert.match(list.stdout, /human/);
      assert.ok(!list.stdout.includes(token));
      assert.ok(list.stdout.includes(token.slice(0, 14)));
    });

    test("revoke: the running gateway refuses the token at once; the audit log says the CLI did it", async () => {
      const t = await ok(["admin-tokens", "create", "--name", "doomed", "--scope", "read"]);
      secrets.push(t.secret);
      assert.equal((await admin(t.secret)).status, 200);
      const revoked = await ok(["admin-tokens", "revoke", t.id]);
      assert.ok(revoked.revoked_at);
      const res = await admin(t.secret);
      assert.equal(res.status, 401, "no wait: the gateway reads the token's row on every call");
      assert.equal(((await res.json()) as any).error.code, "admin_unauthenticated");
      const entries = await gw.gateway.deps.store.db
        .selectFrom("audit_log")
        .selectAll()
        .where("resource_id", "=", t.id)
        .orderBy("created_at")
        .execute();
      assert.deepEqual(
        entries.map((e) => [e.action, e.actor]),
        [
          ["create", "cli"],
          ["revoke", "cli"],
        ],
      );
      await fails(["admin-tokens", "revoke", "adm_nosuchtoken00"], 1, /no admin token/);
    });

    test("usage errors exit 2: no name, no scope, an unknown scope, an unknown subcommand", async () => {
      await fails(["admin-tokens", "create", "--scope", "read"], 2, /--name/);
      await fails(["admin-tokens", "create", "--name", "x"], 2, /--scope/);
      await fails(
        ["admin-tokens", "create", "--name", "x", "--scope", "root"],
        2,
        /one of read, keys, catalog, full/,
      );
      await fails(["admin-tokens", "rotate"], 2, /create, list, revoke/);
      await fails(["admin-tokens", "revoke"], 2, /the token's id/);
    });

    test("keys create --models and keys set-models: the key's models on /v1, all again with `all`", async () => {
      const k = await ok(["keys", "create", "--account", "acme", "--name", "narrow", "--models", "demo-2"]);
      secrets.push(k.secret);
      assert.deepEqual(k.allowed_models, ["demo-2"]);
      assert.equal((await chat(k.secret, "demo-2")).status, 200);
      assert.deepEqual(await chat(k.secret, "demo"), { status: 404, code: "model_not_found" });
      const all = await ok(["keys", "set-models", k.id, "all"]);
      assert.equal(all.allowed_models, null);
      await eventually(
        "every model of the plan again",
        async () => (await chat(k.secret, "demo")).status === 200,
      );
      const back = await ok(["keys", "set-models", "narrow", "demo,demo-2"]);
      assert.deepEqual(back.allowed_models, ["demo", "demo-2"]);
      assert.deepEqual((await ok(["keys", "show", k.id])).allowed_models, ["demo", "demo-2"]);
      await fails(["keys", "create", "--account", acme, "--models", "gpt-9"], 2, /no model "gpt-9"/);
      await fails(["keys", "set-models", k.id, ","], 2, /--models needs/);
    });

    test("no token reached the gateway's logs", () => {
      const logs = gw.logs.join("");
      for (const s of secrets) assert.ok(!logs.includes(s));
    });
  });
}
