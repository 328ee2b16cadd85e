// `users create | set-password | list` as operators run them: `node src/main.ts … --json` in a
// child process against the store of a running gateway (SQLite and PostgreSQL), the password
// given as a flag or piped to stdin, and the result used to log in to the console.
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
plans:
  - id: default
    quota_tokens: 1000000
    models: [demo]
`;

let workDir: string;

before(() => {
  workDir = mkdtempSync(join(tmpdir(), "gw-cli-users-"));
});

after(() => {
  rmSync(workDir, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string>, stdin = ""): Promise<CliResult> {
  return runCli(args, env, { cwd: workDir, stdin });
}

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`users CLI (${kind})`, await storeSuite(kind), () => {
    let gw: TestGateway;
    let env: Record<string, string>;
    let acme: string;

    async function ok(args: string[], stdin = ""): Promise<any> {
      const r = await run([...args, "--json"], env, stdin);
      assert.equal(r.code, 0, `${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
      assert.notEqual(r.json, undefined, r.stdout);
      return r.json;
    }

    async function fails(args: string[], code: number, message: RegExp, stdin = ""): Promise<void> {
      const r = await run([...args, "--json"], env, stdin);
      assert.equal(r.code, code, `${args.join(" ")} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
      assert.match(r.json?.error?.message ?? "", message);
    }

    async function login(email: string, password: string): Promise<number> {
      const res = await fetch(`${gw.origin}/api/console/login`, {
        method: "POST",
        headers: { origin: gw.origin, "content-type": "application/json" },
        body: JSON.stringify({ email, password }),
      });
      await res.arrayBuffer();
      return res.status;
    }

    before(async () => {
      gw = await startTestGateway({ store: kind });
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

    test("users create with --password, by account name; the user can log in", async () => {
      const u = await ok([
        "users",
        "create",
        "--account",
        "acme",
        "--email",
        "Owner@Acme.Test",
        "--role",
        "owner",
        "--password",
        "owner-password-1",
      ]);
      assert.match(u.id, /^usr_[0-9A-Za-z]{14}$/);
      assert.equal(u.email, "owner@acme.test");
      assert.equal(u.role, "owner");
      assert.equal(u.account_id, acme);
      assert.equal(u.disabled, false);
      assert.ok(!Number.isNaN(Date.parse(u.created_at)));
      assert.ok(!JSON.stringify(u).includes("owner-password-1"));
      assert.equal(await login("owner@acme.test", "owner-password-1"), 200);
    });

    test("without --password, one line is read from stdin; the default role is member", async () => {
      const u = await ok(
        ["users", "create", "--account", acme, "--email", "piped@acme.test"],
        "piped-password-2\nignored\n",
      );
      assert.equal(u.role, "member");
      assert.equal(await login("piped@acme.test", "piped-password-2"), 200);
      assert.equal(await login("piped@acme.test", "ignored"), 401);
    });

    test("refusals: taken e-mail and unknown account exit 1; bad input exits 2; nothing is created", async () => {
      await fails(
        ["users", "create", "--account", "acme", "--email", "owner@acme.test", "--password", "another-pass"],
        1,
        /exists/,
      );
      await fails(
        ["users", "create", "--account", "nobody", "--email", "x@acme.test", "--password", "another-pass"],
        1,
        /nobody/,
      );
      await fails(
        ["users", "create", "--account", "acme", "--email", "not-an-email", "--password", "another-pass"],
        2,
        /e-mail/,
      );
      // a control character makes a look-alike of a taken address: refused, and not echoed raw
      const bell = await run(
        [
          "users",
          "create",
          "--account",
          "acme",
          "--email",
          "owner\u0007@acme.test",
          "--password",
          "another-pass",
        ],
        env,
      );
      assert.equal(bell.code, 2, `${bell.stdout}\n${bell.stderr}`);
      assert.match(bell.stderr, /e-mail/);
      assert.ok(!bell.stderr.includes("\u0007"), "the control character is escaped in the message");
      await fails(
        [
          "users",
          "create",
          "--account",
          "acme",
          "--email",
          "r@acme.test",
          "--role",
          "root",
          "--password",
          "another-pass",
        ],
        2,
        /--role/,
      );
      await fails(
        ["users", "create", "--account", "acme", "--email", "s@acme.test", "--password", "short"],
        2,
        /at least 8/,
      );
      await fails(["users", "create", "--account", "acme", "--email", "e@acme.test"], 2, /no password/, "");
      await fails(
        ["users", "create", "--email", "e@acme.test", "--password", "another-pass"],
        2,
        /--account/,
      );
      await fails(
        ["users", "create", "--account", "acme", "--email", "e@acme.test", "--colour", "red"],
        2,
        /--colour/,
      );
      const list = await ok(["users", "list"]);
      assert.deepEqual(list.map((u: any) => u.email).sort(), ["owner@acme.test", "piped@acme.test"]);
    });

    test("set-password, from the flag or stdin, ends the user's sessions", async () => {
      const cookieRes = await fetch(`${gw.origin}/api/console/login`, {
        method: "POST",
        headers: { origin: gw.origin, "content-type": "application/json" },
        body: JSON.stringify({ email: "piped@acme.test", password: "piped-password-2" }),
      });
      const cookie = (cookieRes.headers.get("set-cookie") ?? "").split(";")[0]!;
      const u = await ok(["users", "set-password", "PIPED@acme.test"], "new-password-3\n");
      assert.equal(u.email, "piped@acme.test");
      const me = await fetch(`${gw.origin}/api/console/me`, { headers: { cookie } });
      assert.equal(me.status, 401, "the old session ended");
      assert.equal(await login("piped@acme.test", "piped-password-2"), 401);
      assert.equal(await login("piped@acme.test", "new-password-3"), 200);
      await ok(["users", "set-password", "piped@acme.test", "--password", "newer-password-4"]);
      assert.equal(await login("piped@acme.test", "newer-password-4"), 200);
      await fails(
        ["users", "set-password", "ghost@acme.test", "--password", "whatever-123"],
        1,
        /ghost@acme\.test/,
      );
      await fails(["users", "set-password"], 2, /e-mail/);
      await fails(["users", "set-password", "piped@acme.test", "--password", "tiny"], 2, /at least 8/);
    });

    test("list, by account, with and without --json; never a password hash", async () => {
      const other = await gw.account("other");
      await ok([
        "users",
        "create",
        "--account",
        other,
        "--email",
        "o@other.test",
        "--password",
        "other-pass-5",
      ]);
      const all = await ok(["users", "list"]);
      assert.equal(all.length, 3);
      const ofAcme = await ok(["users", "list", "--account", "acme"]);
      assert.deepEqual(ofAcme.map((u: any) => u.email).sort(), ["owner@acme.test", "piped@acme.test"]);
      const human = await run(["users", "list", "--account", "other"], env);
      assert.equal(human.code, 0);
      assert.match(human.stdout, /o@other\.test\s+member\s+account=acc_/);
      for (const r of [JSON.stringify(all), human.stdout]) assert.ok(!r.includes("scrypt"));
      await fails(["users", "list", "--account", "nobody"], 1, /nobody/);
      await fails(["users", "rename"], 2, /create, set-password, list/);
    });
  });
}
