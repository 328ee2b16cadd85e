// The CLI as users run it: `node src/main.ts … --json` in a child process, against a SQLite
// folder or a PostgreSQL database, and its effect on a gateway that is already running.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { ConfigInput } from "../src/config/schema.ts";
import { migrate, openStore } from "../src/store/db.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";

/** every migration of src/store/migrations, in order */
const MIGRATIONS = [
  "001-initial",
  "002-rate-limits",
  "003-safety",
  "004-console",
  "005-console-indexes",
  "006-uncharged-tokens",
  "007-cache-tokens",
  "008-attempts",
  "009-overruns",
  "010-shared-ledger",
  "011-prices",
  "012-client-api",
  "013-stored-responses",
  "015-shared-money",
  "016-ledger-charges",
  "017-stored-response-owners",
  "018-login-throttle",
  "019-control-plane",
  "020-key-models",
  "023-agent-sessions",
  "024-batch-commit",
];

import { type CliResult, runCli } from "./support/cli.ts";
import { createTestDatabase, needsPostgres, storeSuite, type TestDatabase } from "./support/postgres.ts";

let workDir: string;

before(() => {
  workDir = mkdtempSync(join(tmpdir(), "gw-cli-test-"));
});

after(() => {
  rmSync(workDir, { recursive: true, force: true });
});

function run(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return runCli(args, env, { cwd: workDir });
}

/** Runs with --json and expects success and one JSON document on stdout. */
async function ok(args: string[], env: Record<string, string | undefined>): Promise<any> {
  const r = await run([...args, "--json"], env);
  assert.equal(r.code, 0, `${args.join(" ")} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.notEqual(r.json, undefined, `${args.join(" ")}: stdout is not one JSON document:\n${r.stdout}`);
  return r.json;
}

/** Runs with --json and expects the exit code and an error document naming the problem. */
async function fails(
  args: string[],
  env: Record<string, string | undefined>,
  code: number,
  message: RegExp,
): Promise<string> {
  const r = await run([...args, "--json"], env);
  assert.equal(r.code, code, `${args.join(" ")} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.equal(typeof r.json?.error?.message, "string", `no error document: ${r.stdout}`);
  assert.match(r.json.error.message, message);
  return r.json.error.message;
}

/**
 * The configuration both the CLI and the running gateway use in these tests. demo is priced
 * ($2 per million prompt tokens, $10 per million output tokens), so its calls cost money.
 */
const PRICING = { input: 2, output: 10 };
const MODELS: ConfigInput["models"] = [
  { id: "demo", provider: "demo", owned_by: "chat-gateway", pricing: PRICING },
  { id: "demo-large", provider: "demo", owned_by: "chat-gateway" },
];
const PLANS: ConfigInput["plans"] = [
  { id: "default", quota_tokens: 1_000_000_000, models: ["demo", "demo-large"] },
  { id: "demo-only", quota_tokens: 1_000_000, models: ["demo"] },
];
const CONFIG_YAML = `providers:
  - id: demo
    type: demo
models:
  - id: demo
    provider: demo
    owned_by: chat-gateway
    pricing: { input: 2, output: 10 }
  - id: demo-large
    provider: demo
    owned_by: chat-gateway
plans:
  - id: default
    quota_tokens: 1000000000
    models: [demo, demo-large]
  - id: demo-only
    quota_tokens: 1000000
    models: [demo]
`;

function writeConfig(name: string, text: string): string {
  const path = join(workDir, name);
  writeFileSync(path, text);
  return path;
}

// Helpers for the last suites: a running gateway picks up what the CLI changes, no restart.

interface Reply {
  status: number;
  body: any;
}

async function chat(gw: TestGateway, secret: string, model = "demo"): Promise<Reply> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "Hello there" }] }),
  });
  return { status: res.status, body: await res.json() };
}

async function models(gw: TestGateway, secret: string): Promise<Reply> {
  const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${secret}` } });
  return { status: res.status, body: await res.json() };
}

/** Polls until the reply matches, for up to 3 s; fails with the last reply otherwise. */
async function eventually(
  what: string,
  probe: () => Promise<Reply>,
  match: (r: Reply) => boolean,
): Promise<Reply> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const r = await probe();
    if (match(r)) return r;
    if (Date.now() > deadline) assert.fail(`${what}: still ${r.status} ${JSON.stringify(r.body)} after 3 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const code = (status: number, errorCode?: string) => (r: Reply) =>
  r.status === status && (errorCode === undefined || r.body?.error?.code === errorCode);

describe("CLI on SQLite", () => {
  let env: Record<string, string>;
  let dataDir: string;
  const secrets: string[] = [];

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), "gw-cli-data-"));
    env = { GATEWAY_DATA_DIR: dataDir, GATEWAY_CONFIG: writeConfig("sqlite.yaml", CONFIG_YAML) };
  });

  after(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  test("migrate applies the migrations once and names the store", async () => {
    const first = await ok(["migrate"], env);
    assert.deepEqual(first.applied, MIGRATIONS);
    assert.equal(first.store, join(dataDir, "gateway.sqlite"));
    const second = await ok(["migrate"], env);
    assert.deepEqual(second.applied, []);
  });

  test("two processes migrating a fresh SQLite folder at once both succeed", async () => {
    // What `serve` and a CLI command (or two CLI commands) started together on a new folder do:
    // two connections to one new file, each running the migrations.
    const fresh = mkdtempSync(join(tmpdir(), "gw-cli-fresh-"));
    const a = openStore({ data_dir: fresh });
    const b = openStore({ data_dir: fresh });
    try {
      const results = await Promise.allSettled([migrate(a), migrate(b)]);
      const errors = results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
      assert.deepEqual(errors, [], "a concurrent migration failed");
      const applied = results.flatMap((r) => (r.status === "fulfilled" ? r.value : []));
      assert.deepEqual(applied, MIGRATIONS, "each migration ran exactly once");
    } finally {
      await a.close();
      await b.close();
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  test("accounts create: default plan, or a given plan and quota", async () => {
    const acme = await ok(["accounts", "create", "--name", "acme"], env);
    assert.match(acme.id, /^acc_[0-9A-Za-z]{14}$/);
    assert.equal(acme.name, "acme");
    assert.equal(acme.plan, "default");
    assert.equal(acme.quota_tokens, 1_000_000_000);
    assert.equal(acme.quota_source, "plan");
    assert.equal(acme.used_tokens, 0);
    assert.equal(acme.remaining_tokens, 1_000_000_000);
    assert.equal(acme.disabled, false);
    assert.ok(!Number.isNaN(Date.parse(acme.created_at)));

    const beta = await ok(
      ["accounts", "create", "--name", "beta", "--plan", "demo-only", "--quota", "500"],
      env,
    );
    assert.equal(beta.plan, "demo-only");
    assert.equal(beta.quota_tokens, 500);
    assert.equal(beta.quota_source, "account");
    assert.equal(beta.remaining_tokens, 500);
  });

  test("accounts create refuses an unknown plan (exit 2), a duplicate name (exit 1) and bad input", async () => {
    await Promise.all([
      fails(["accounts", "create", "--name", "ghost", "--plan", "platinum"], env, 2, /platinum/),
      fails(["accounts", "create", "--name", "acme"], env, 1, /acme/),
      fails(["accounts", "create"], env, 2, /--name/),
      fails(["accounts", "create", "--name", "q", "--quota", "lots"], env, 2, /--quota/),
      fails(["accounts", "create", "--name", "q", "--quota", "-5"], env, 2, /--quota must not be negative/),
    ]);
    const names = (await ok(["accounts", "list"], env)).map((a: any) => a.name);
    assert.deepEqual(names.toSorted(), ["acme", "beta"], "no refused account was created");
  });

  test("accounts list and show, by id and by name", async () => {
    const list = await ok(["accounts", "list"], env);
    assert.ok(Array.isArray(list));
    assert.equal(list.length, 2);
    const acme = list.find((a: any) => a.name === "acme");
    assert.ok(acme);
    const [byId, byName] = await Promise.all([
      ok(["accounts", "show", acme.id], env),
      ok(["accounts", "show", "acme"], env),
      fails(["accounts", "show", "nobody"], env, 1, /nobody/),
      fails(["accounts", "show"], env, 2, /id or name/),
    ]);
    assert.deepEqual(byId, byName);
    assert.equal(byId.id, acme.id);
    assert.equal(byId.keys, 0);
  });

  test("accounts set: plan, quota (and none), disabled", async () => {
    let a = await ok(["accounts", "set", "beta", "--plan", "default"], env);
    assert.equal(a.plan, "default");
    assert.equal(a.quota_tokens, 500, "the account's own quota still applies");

    a = await ok(["accounts", "set", "beta", "--quota", "none"], env);
    assert.equal(a.quota_source, "plan");
    assert.equal(a.quota_tokens, 1_000_000_000);

    a = await ok(["accounts", "set", "beta", "--quota", "2500", "--plan", "demo-only"], env);
    assert.equal(a.quota_source, "account");
    assert.equal(a.quota_tokens, 2500);
    assert.equal(a.plan, "demo-only");

    a = await ok(["accounts", "set", "beta", "--disabled", "true"], env);
    assert.equal(a.disabled, true);
    assert.equal((await ok(["accounts", "show", "beta"], env)).disabled, true);
    a = await ok(["accounts", "set", a.id, "--disabled", "false"], env);
    assert.equal(a.disabled, false);
  });

  test("accounts set: the safety override, and its refusals", async () => {
    let a = await ok(["accounts", "show", "beta"], env);
    assert.deepEqual(a.safety, {
      enabled: false,
      streaming: "json",
      setting: "inherit",
      streaming_setting: "inherit",
    });
    a = await ok(["accounts", "set", "beta", "--safety", "off", "--safety-streaming", "reviewed"], env);
    assert.deepEqual(a.safety, {
      enabled: false,
      streaming: "reviewed",
      setting: "off",
      streaming_setting: "reviewed",
    });
    a = await ok(["accounts", "set", "beta", "--safety", "inherit", "--safety-streaming", "inherit"], env);
    assert.equal(a.safety.setting, "inherit");
    assert.equal(a.safety.streaming_setting, "inherit");
    await Promise.all([
      // this configuration has no reviewer: every reviewed call would fail closed
      fails(["accounts", "set", "beta", "--safety", "on"], env, 2, /reviewer/),
      fails(
        ["accounts", "set", "beta", "--safety", "yes"],
        env,
        2,
        /--safety must be one of on, off, inherit/,
      ),
      fails(["accounts", "set", "beta", "--safety-streaming", "sse"], env, 2, /--safety-streaming/),
    ]);
    assert.equal((await ok(["accounts", "show", "beta"], env)).safety.setting, "inherit");
  });

  test("accounts set refuses an unknown plan with exit 2 and changes nothing", async () => {
    await Promise.all([
      fails(["accounts", "set", "beta", "--plan", "platinum"], env, 2, /platinum/),
      fails(["accounts", "set", "beta", "--plan", "platinum", "--disabled", "true"], env, 2, /platinum/),
      fails(["accounts", "set", "beta", "--disabled", "maybe", "--quota", "1"], env, 2, /--disabled/),
      fails(["accounts", "set", "beta"], env, 2, /--plan|--quota|--disabled/),
      fails(["accounts", "set", "nobody", "--disabled", "true"], env, 1, /nobody/),
    ]);
    const beta = await ok(["accounts", "show", "beta"], env);
    assert.equal(beta.plan, "demo-only");
    assert.equal(beta.disabled, false);
    assert.equal(beta.quota_tokens, 2500);
  });

  test("keys create prints the secret once; it is stored nowhere", async () => {
    const k = await ok(["keys", "create", "--account", "acme", "--name", "laptop", "--limit", "1000"], env);
    assert.match(k.secret, /^sk-[0-9A-Za-z]{43,}$/);
    assert.match(k.id, /^key_[0-9A-Za-z]{14}$/);
    assert.equal(k.name, "laptop");
    assert.equal(k.prefix, k.secret.slice(0, k.prefix.length));
    assert.ok(k.prefix.length < 16);
    assert.equal(k.limit_tokens, 1000);
    assert.equal(k.remaining_tokens, 1000);
    assert.equal(k.used_tokens, 0);
    assert.equal(k.disabled, false);
    secrets.push(k.secret);

    const unnamed = await ok(
      ["keys", "create", "--account", (await ok(["accounts", "show", "acme"], env)).id],
      env,
    );
    assert.equal(unnamed.name, null);
    assert.equal(unnamed.limit_tokens, null);
    assert.equal(unnamed.remaining_tokens, null);
    assert.notEqual(unnamed.secret, k.secret);
    secrets.push(unnamed.secret);

    // Not in the SQLite files either (the database, its WAL and shared memory).
    for (const file of readdirSync(dataDir)) {
      const bytes = readFileSync(join(dataDir, file));
      for (const s of secrets) assert.ok(!bytes.includes(s), `${file} contains a key's secret`);
    }
  });

  test("keys create refuses an unknown account and bad limits", async () => {
    await Promise.all([
      fails(["keys", "create", "--account", "nobody"], env, 1, /nobody/),
      fails(["keys", "create"], env, 2, /--account/),
      fails(["keys", "create", "--account", "acme", "--limit", "ten"], env, 2, /--limit/),
    ]);
    assert.equal((await ok(["keys", "list", "--account", "acme"], env)).length, 2, "no key was created");
  });

  test("keys list and show never include the secret", async () => {
    const list = await ok(["keys", "list", "--account", "acme"], env);
    assert.ok(Array.isArray(list));
    assert.equal(list.length, 2);
    for (const k of list) assert.ok(!("secret" in k));
    const laptopId = list.find((k: any) => k.name === "laptop")?.id;
    assert.ok(laptopId);

    const [byName, byId, betaKeys, acme] = await Promise.all([
      ok(["keys", "show", "laptop"], env),
      ok(["keys", "show", laptopId], env),
      ok(["keys", "list", "--account", "beta"], env),
      ok(["accounts", "show", "acme"], env),
      fails(["keys", "show", "nothing"], env, 1, /nothing/),
      fails(["keys", "list"], env, 2, /--account/),
    ]);
    assert.deepEqual(byId, byName);
    assert.ok(!("secret" in byId));
    assert.equal(byId.limit_tokens, 1000);
    assert.deepEqual(betaKeys, []);
    assert.equal(acme.keys, 2);

    const outputs = await Promise.all(
      [
        ["keys", "list", "--account", "acme"],
        ["keys", "show", "laptop"],
        ["accounts", "show", "acme"],
      ].flatMap((args) => [run([...args, "--json"], env), run(args, env)]),
    );
    for (const r of outputs) {
      assert.equal(r.code, 0, r.stderr);
      for (const s of secrets) assert.ok(!r.stdout.includes(s), `printed a secret:\n${r.stdout}`);
    }
  });

  test("keys disable and enable, by name and by id", async () => {
    const off = await ok(["keys", "disable", "laptop"], env);
    assert.equal(off.disabled, true);
    assert.equal((await ok(["keys", "show", off.id], env)).disabled, true);
    const on = await ok(["keys", "enable", off.id], env);
    assert.equal(on.disabled, false);
    assert.equal((await ok(["keys", "show", "laptop"], env)).disabled, false);
    await Promise.all([
      fails(["keys", "disable"], env, 2, /id or name/),
      fails(["keys", "enable", "nothing"], env, 1, /nothing/),
    ]);
  });

  test("keys set-limit N and none", async () => {
    let k = await ok(["keys", "set-limit", "laptop", "25"], env);
    assert.equal(k.limit_tokens, 25);
    assert.equal(k.remaining_tokens, 25);
    k = await ok(["keys", "set-limit", k.id, "none"], env);
    assert.equal(k.limit_tokens, null);
    assert.equal(k.remaining_tokens, null);
    assert.equal((await ok(["keys", "show", "laptop"], env)).limit_tokens, null);
    await Promise.all([
      fails(["keys", "set-limit", "laptop", "lots"], env, 2, /limit/),
      fails(["keys", "set-limit", "laptop", "-5"], env, 2, /the limit must not be negative/),
      fails(["keys", "set-limit", "laptop"], env, 2, /TOKENS/),
      fails(["keys", "set-limit", "nothing", "5"], env, 1, /nothing/),
    ]);
  });

  test("per-session caps: keys create --session-limit/--session-budget, keys set-session-cap", async () => {
    const k = await ok(
      [
        "keys",
        "create",
        "--account",
        "acme",
        "--name",
        "agent",
        "--session-limit",
        "200000",
        "--session-budget",
        "2.5",
      ],
      env,
    );
    secrets.push(k.secret);
    assert.deepEqual([k.session_limit_tokens, k.session_budget_usd], [200_000, 2.5]);
    let v = await ok(["keys", "set-session-cap", "agent", "--limit", "none"], env);
    assert.deepEqual([v.session_limit_tokens, v.session_budget_usd], [null, 2.5]);
    v = await ok(["keys", "set-session-cap", k.id, "--budget", "none", "--limit", "5000"], env);
    assert.deepEqual([v.session_limit_tokens, v.session_budget_usd], [5000, null]);
    const text = await run(["keys", "show", "agent"], env);
    assert.match(text.stdout, /session-cap=5000 tokens/);
    await Promise.all([
      fails(["keys", "set-session-cap", "agent"], env, 2, /--limit TOKENS\|none and\/or --budget/),
      fails(["keys", "set-session-cap", "agent", "--limit", "0"], env, 2, /positive/),
      fails(["keys", "set-session-cap", "agent", "--budget", "-1"], env, 2, /budget/),
      fails(["keys", "create", "--account", "acme", "--session-limit", "lots"], env, 2, /--session-limit/),
    ]);
  });

  test("money budgets: accounts set --budget-usd/--budget-period, keys set-budget; show and list print them", async () => {
    const before = await ok(["accounts", "show", "acme"], env);
    assert.deepEqual(
      [before.budget_usd, before.budget_period, before.spent_usd, before.left_usd, before.budget_resets_at],
      [null, "none", 0, null, null],
    );
    let a = await ok(["accounts", "set", "acme", "--budget-usd", "25", "--budget-period", "month"], env);
    assert.equal(a.budget_usd, 25);
    assert.equal(a.budget_period, "month");
    assert.equal(a.spent_usd, 0);
    assert.equal(a.left_usd, 25);
    const now = new Date();
    const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    assert.equal(a.budget_resets_at, nextMonth);
    // the amount alone keeps the period; the period alone keeps the amount
    a = await ok(["accounts", "set", "acme", "--budget-usd", "0.000000001"], env);
    assert.deepEqual([a.budget_usd, a.budget_period], [0.000000001, "month"]);
    a = await ok(["accounts", "set", "acme", "--budget-period", "none"], env);
    assert.deepEqual([a.budget_usd, a.budget_period, a.budget_resets_at], [0.000000001, "none", null]);
    a = await ok(["accounts", "set", "acme", "--budget-usd", "1234567.123456789"], env);
    assert.equal(a.budget_usd, 1234567.123456789);
    const listed = (await ok(["accounts", "list"], env)).find((x: any) => x.name === "acme");
    assert.equal(listed.budget_usd, 1234567.123456789);
    a = await ok(["accounts", "set", "acme", "--budget-usd", "none"], env);
    assert.deepEqual([a.budget_usd, a.budget_period, a.left_usd], [null, "none", null]);

    let k = await ok(["keys", "set-budget", "laptop", "5", "--period", "month"], env);
    assert.deepEqual(
      [k.budget_usd, k.budget_period, k.spent_usd, k.left_usd, k.budget_resets_at],
      [5, "month", 0, 5, nextMonth],
    );
    k = await ok(["keys", "set-budget", k.id, "7.25"], env);
    assert.deepEqual([k.budget_usd, k.budget_period], [7.25, "month"], "the period stays");
    const shown = await ok(["keys", "show", "laptop"], env);
    assert.deepEqual([shown.budget_usd, shown.left_usd], [7.25, 7.25]);
    const inList = (await ok(["keys", "list", "--account", "acme"], env)).find((x: any) => x.id === k.id);
    assert.equal(inList.budget_usd, 7.25);

    // the human lines say the same
    const [showText, listText] = await Promise.all([
      run(["keys", "show", "laptop"], env),
      run(["keys", "list", "--account", "acme"], env),
    ]);
    const date = nextMonth.slice(0, 10);
    assert.match(
      showText.stdout,
      new RegExp(`budget=\\$7\\.25/month  spent=\\$0  left=\\$7\\.25  resets=${date}`),
    );
    assert.match(listText.stdout, /laptop .*budget=\$7\.25\/month/);
    k = await ok(["keys", "set-budget", "laptop", "none"], env);
    assert.deepEqual([k.budget_usd, k.budget_period, k.budget_resets_at], [null, "none", null]);
    assert.match((await run(["accounts", "show", "acme"], env)).stdout, /spent=\$0 {2}budget=none/);
  });

  test("money budgets: bad amounts and periods exit 2 naming the problem, and change nothing", async () => {
    await ok(["keys", "set-budget", "laptop", "3"], env);
    await Promise.all([
      fails(["accounts", "set", "acme", "--budget-usd=-1"], env, 2, /--budget-usd must not be negative/),
      fails(
        ["accounts", "set", "acme", "--budget-usd", "1e3"],
        env,
        2,
        /--budget-usd must be an amount of dollars/,
      ),
      fails(["accounts", "set", "acme", "--budget-usd", "0.0000000001"], env, 2, /more than 9 decimals/),
      fails(["accounts", "set", "acme", "--budget-usd", "9000000.01"], env, 2, /at most 9000000/),
      fails(["accounts", "set", "acme", "--budget-usd", "Infinity"], env, 2, /--budget-usd/),
      fails(
        ["accounts", "set", "acme", "--budget-period", "week"],
        env,
        2,
        /--budget-period must be one of none, month/,
      ),
      // a period needs an amount to apply to
      fails(
        ["accounts", "set", "acme", "--budget-period", "month"],
        env,
        2,
        /--budget-period: .*needs a budget amount/,
      ),
      fails(
        ["keys", "set-budget", "laptop", "none", "--period", "month"],
        env,
        2,
        /--period: .*needs a budget/,
      ),
      fails(["keys", "set-budget", "laptop", "--", "-5"], env, 2, /the budget must not be negative/),
      // without the "--": an amount, not the option parser's "Unknown option '-5'"
      fails(["keys", "set-budget", "laptop", "-5"], env, 2, /the budget must not be negative/),
      fails(
        ["keys", "set-budget", "laptop", "-0.50", "--period", "month"],
        env,
        2,
        /the budget must not be negative/,
      ),
      fails(["keys", "set-budget", "laptop", "-$5"], env, 2, /the budget must not be negative/),
      fails(["accounts", "set", "acme", "--budget-usd", "-1"], env, 2, /--budget-usd must not be negative/),
      fails(["keys", "set-budget", "laptop", "five"], env, 2, /the budget must be an amount of dollars/),
      fails(["keys", "set-budget", "laptop", "1", "--period", "year"], env, 2, /--period must be one of/),
      fails(["keys", "set-budget", "laptop"], env, 2, /USD\|none/),
      fails(["keys", "set-budget", "nothing", "5"], env, 1, /nothing/),
    ]);
    const [acme, laptop] = await Promise.all([
      ok(["accounts", "show", "acme"], env),
      ok(["keys", "show", "laptop"], env),
    ]);
    assert.deepEqual([acme.budget_usd, acme.budget_period], [null, "none"]);
    assert.deepEqual([laptop.budget_usd, laptop.budget_period], [3, "none"]);
    await ok(["keys", "set-budget", "laptop", "none"], env);
  });

  test("a key name shared by two keys is ambiguous (exit 1); ids still work", async () => {
    const [a, b] = await Promise.all([
      ok(["keys", "create", "--account", "acme", "--name", "twin"], env),
      ok(["keys", "create", "--account", "beta", "--name", "twin"], env),
    ]);
    secrets.push(a.secret, b.secret);
    await Promise.all([
      fails(["keys", "show", "twin"], env, 1, /twin/),
      fails(["keys", "disable", "twin"], env, 1, /twin/),
    ]);
    assert.equal((await ok(["keys", "disable", b.id], env)).id, b.id);
    assert.equal((await ok(["keys", "show", a.id], env)).disabled, false);
  });

  test("without --json: human lines, errors on stderr", async () => {
    const [list, bad] = await Promise.all([
      run(["accounts", "list"], env),
      run(["accounts", "set", "beta", "--plan", "platinum"], env),
    ]);
    assert.equal(list.code, 0);
    assert.match(list.stdout, /acme/);
    assert.match(list.stdout, /beta/);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /platinum/);
  });
});

describe("CLI on PostgreSQL (DATABASE_URL)", await needsPostgres(), () => {
  let database: TestDatabase;
  let env: Record<string, string>;

  before(async () => {
    database = await createTestDatabase();
    env = {
      DATABASE_URL: database.url,
      // a data dir that must stay unused: the database URL wins
      GATEWAY_DATA_DIR: join(workDir, "pg-unused-data"),
      GATEWAY_CONFIG: writeConfig("pg.yaml", CONFIG_YAML),
    };
  });

  after(async () => {
    await database?.drop();
  });

  test("migrate, accounts and keys work against the database", async () => {
    const m = await ok(["migrate"], env);
    assert.deepEqual(m.applied, MIGRATIONS);
    assert.match(m.store, /^postgres:\/\/[^@]*\/gw_test_/);
    assert.ok(!m.store.includes("@"), "the location carries no credentials");

    const account = await ok(["accounts", "create", "--name", "pg-acme", "--plan", "demo-only"], env);
    const key = await ok(
      ["keys", "create", "--account", "pg-acme", "--name", "pg-key", "--limit", "10"],
      env,
    );
    assert.match(key.secret, /^sk-[0-9A-Za-z]{43,}$/);
    assert.equal((await ok(["keys", "disable", "pg-key"], env)).disabled, true);
    assert.equal((await ok(["keys", "set-limit", "pg-key", "none"], env)).limit_tokens, null);
    assert.equal((await ok(["accounts", "set", "pg-acme", "--quota", "42"], env)).quota_tokens, 42);
    const shown = await ok(["keys", "show", key.id], env);
    assert.ok(!("secret" in shown));
    assert.equal(shown.disabled, true);

    // The rows are in PostgreSQL; the secret is in no column.
    const store = openStore({ data_dir: env.GATEWAY_DATA_DIR!, database_url: database.url });
    try {
      assert.deepEqual(await migrate(store), []);
      const acc = await store.db.selectFrom("accounts").selectAll().execute();
      assert.deepEqual(
        acc.map((a) => [a.id, a.name, a.plan_id, a.quota_tokens]),
        [[account.id, "pg-acme", "demo-only", 42]],
      );
      const keys = await store.db.selectFrom("api_keys").selectAll().execute();
      assert.equal(keys.length, 1);
      for (const value of Object.values(keys[0]!)) assert.ok(!String(value).includes(key.secret));
    } finally {
      await store.close();
    }
    assert.throws(() => readdirSync(env.GATEWAY_DATA_DIR!), /ENOENT/, "no SQLite folder was created");
  });
});

describe("config check", () => {
  const dataEnv = () => ({ GATEWAY_DATA_DIR: join(workDir, "config-check-data") });

  test("the embedded defaults are OK", async () => {
    const c = await ok(["config", "check"], dataEnv());
    assert.equal(c.ok, true);
    assert.equal(c.source, "embedded defaults");
    assert.deepEqual(c.models, ["demo", "demo-embedding"]);
    assert.deepEqual(c.providers, [{ id: "demo", type: "demo" }]);
    assert.equal(c.default_plan, "default");
    assert.deepEqual(
      c.plans.map((p: any) => [p.id, p.models]),
      [["default", ["demo", "demo-embedding"]]],
    );
    assert.throws(() => readdirSync(dataEnv().GATEWAY_DATA_DIR), /ENOENT/, "config check opens no store");
  });

  test("a configuration file is summarised", async () => {
    const path = writeConfig("check-good.yaml", CONFIG_YAML);
    const c = await ok(["config", "check"], { ...dataEnv(), GATEWAY_CONFIG: path });
    assert.equal(c.ok, true);
    assert.equal(c.source, path);
    assert.deepEqual(c.models, ["demo", "demo-large"]);
    assert.deepEqual(
      c.plans.map((p: any) => [p.id, p.quota_tokens, p.models]),
      [
        ["default", 1_000_000_000, ["demo", "demo-large"]],
        ["demo-only", 1_000_000, ["demo"]],
      ],
    );
  });

  test("broken configurations exit 2 and name the file, the field and the problem", async () => {
    const badProvider = writeConfig(
      "check-bad.yaml",
      CONFIG_YAML.replace("provider: demo\n    owned_by", "provider: nope\n    owned_by"),
    );
    const syntax = writeConfig("check-syntax.yaml", "providers:\n  - id: demo\n   type: demo\n");
    const missing = join(workDir, "no-such-config.yaml");
    const empty = writeConfig("check-bad-2.yaml", "providers: []\n");
    const [m1, m2, m3] = await Promise.all([
      fails(["config", "check"], { ...dataEnv(), GATEWAY_CONFIG: badProvider }, 2, /models\[0\]\.provider/),
      fails(["config", "check"], { ...dataEnv(), GATEWAY_CONFIG: syntax }, 2, /line \d+/),
      fails(["config", "check"], { ...dataEnv(), GATEWAY_CONFIG: missing }, 2, /cannot read/),
      fails(["config", "check"], { ...dataEnv(), PORT: "eighty" }, 2, /PORT/),
      // every command refuses to run on a broken configuration
      fails(["accounts", "list"], { ...dataEnv(), GATEWAY_CONFIG: empty }, 2, /providers/),
    ]);
    assert.ok(m1.includes(badProvider), m1);
    assert.match(m1, /unknown provider "nope"/);
    assert.ok(m2.includes(syntax), m2);
    assert.ok(m3.includes(missing), m3);
  });
});

describe("usage errors exit 2 with a message", () => {
  const env = () => ({ GATEWAY_DATA_DIR: join(workDir, "usage-data") });

  before(async () => {
    // migrated once up front: the checks below run side by side
    await ok(["migrate"], env());
  });

  test("unknown commands and subcommands", async () => {
    await Promise.all([
      fails(["frobnicate"], env(), 2, /unknown command "frobnicate"/),
      fails(["accounts", "delete", "x"], env(), 2, /accounts delete/),
      fails(["keys", "rotate", "x"], env(), 2, /keys rotate/),
      fails(["config", "show"], env(), 2, /config check/),
      fails(["accounts"], env(), 2, /create, list, show, set/),
    ]);
  });

  test("unknown flags and unexpected arguments", async () => {
    await Promise.all([
      fails(["accounts", "list", "--bogus"], env(), 2, /--bogus/),
      fails(["accounts", "create", "--name", "x", "--colour", "red"], env(), 2, /--colour/),
      fails(["keys", "create", "--account", "x", "--secret", "sk-mine"], env(), 2, /--secret/),
      fails(["accounts", "list", "extra"], env(), 2, /extra|argument/),
    ]);
    const list = await ok(["accounts", "list"], env());
    assert.deepEqual(list, [], "nothing was created");
  });

  test("--help prints the usage and exits 0", async () => {
    const r = await run(["--help"], env());
    assert.equal(r.code, 0);
    assert.match(r.stdout, /accounts create/);
    assert.match(r.stdout, /keys set-limit/);
  });
});

for (const kind of ["sqlite", "postgres"] as const) {
  describe(`CLI changes reach a running gateway (${kind})`, await storeSuite(kind), () => {
    let gw: TestGateway;
    let env: Record<string, string>;
    let secret: string;
    let keyId: string;
    let spent = 0;

    before(async () => {
      gw = await startTestGateway({ store: kind, config: { models: MODELS, plans: PLANS } });
      const store = gw.gateway.deps.config.store;
      env = {
        GATEWAY_CONFIG: writeConfig(`live-${kind}.yaml`, CONFIG_YAML),
        GATEWAY_DATA_DIR: store.data_dir,
      };
      if (store.database_url) env.DATABASE_URL = store.database_url;
      await ok(["accounts", "create", "--name", "live"], env);
      const k = await ok(["keys", "create", "--account", "live", "--name", "live-key"], env);
      secret = k.secret;
      keyId = k.id;
    });

    after(async () => {
      await gw?.close();
    });

    /** A chat call with the key; counts the tokens of every answered call. */
    async function call(model = "demo"): Promise<Reply> {
      const r = await chat(gw, secret, model);
      if (r.status === 200) spent += r.body.usage.total_tokens;
      return r;
    }

    async function works(what: string): Promise<void> {
      const r = await eventually(what, () => call(), code(200));
      assert.equal(r.body.object, "chat.completion");
    }

    test("a key created by the CLI works on the running gateway", async () => {
      await works("the new key");
      const m = await models(gw, secret);
      assert.equal(m.status, 200);
      assert.deepEqual(m.body.data.map((x: any) => x.id).toSorted(), ["demo", "demo-large"]);
    });

    test("keys disable → 403 key_disabled; keys enable → works again", async () => {
      await ok(["keys", "disable", "live-key"], env);
      const refused = await eventually("after keys disable", () => call(), code(403, "key_disabled"));
      assert.equal(refused.body.error.type, "permission_error");
      await ok(["keys", "enable", keyId], env);
      await works("after keys enable");
    });

    test("keys set-limit 1 → 429 key_limit_exceeded; none → works again", async () => {
      await works("before the limit");
      await ok(["keys", "set-limit", keyId, "1"], env);
      await eventually("after keys set-limit 1", () => call(), code(429, "key_limit_exceeded"));
      await ok(["keys", "set-limit", keyId, "none"], env);
      await works("after keys set-limit none");
    });

    test("accounts set --plan demo-only → /v1/models lists only demo", async () => {
      await ok(["accounts", "set", "live", "--plan", "demo-only"], env);
      const m = await eventually(
        "after accounts set --plan demo-only",
        () => models(gw, secret),
        (r) => r.status === 200 && r.body.data.length === 1,
      );
      assert.deepEqual(
        m.body.data.map((x: any) => x.id),
        ["demo"],
      );
      const large = await call("demo-large");
      assert.equal(large.status, 404);
      assert.equal(large.body.error.code, "model_not_found");
      await works("demo on the demo-only plan");
      await ok(["accounts", "set", "live", "--plan", "default"], env);
      await eventually("back on the default plan", () => call("demo-large"), code(200));
    });

    test("accounts set --disabled true → 403 account_disabled; false → works again", async () => {
      await ok(["accounts", "set", "live", "--disabled", "true"], env);
      await eventually("after accounts set --disabled true", () => call(), code(403, "account_disabled"));
      await ok(["accounts", "set", "live", "--disabled", "false"], env);
      await works("after accounts set --disabled false");
    });

    test("the CLI shows the key's and the account's consumption", async () => {
      const key = await ok(["keys", "show", keyId], env);
      const account = await ok(["accounts", "show", "live"], env);
      // every answered call above was committed before its reply; refused calls cost nothing
      assert.ok(spent > 0);
      assert.equal(key.used_tokens, spent, "the key's counter is the sum of the tokens its calls reported");
      assert.equal(account.used_tokens, key.used_tokens, "the account's only key");
    });

    test("the CLI shows what the key and the account spent, to the nanodollar", async () => {
      const db = gw.gateway.deps.store.db;
      const rows = await db
        .selectFrom("call_records")
        .select(["prompt_tokens", "completion_tokens", "cost_nanos", "cost_source", "public_model"])
        .where("key_id", "=", keyId)
        .where("status", "=", "ok")
        .execute();
      const demo = rows.filter((r) => r.public_model === "demo");
      assert.ok(demo.length > 0);
      // by hand: $2 and $10 per million tokens are 2,000 and 10,000 nanodollars a token
      for (const r of demo) {
        assert.equal(Number(r.cost_nanos), r.prompt_tokens * 2_000 + r.completion_tokens * 10_000);
        assert.equal(r.cost_source, "config");
      }
      const spentNanos = rows.reduce((sum, r) => sum + Number(r.cost_nanos), 0);
      assert.ok(spentNanos > 0);
      const key = await ok(["keys", "show", keyId], env);
      assert.equal(key.spent_usd, spentNanos / 1e9);
      assert.equal((await ok(["accounts", "show", "live"], env)).spent_usd, spentNanos / 1e9);
    });

    test("a budget set by the CLI refuses the next call once spent; none lifts it", async () => {
      const spent = (await ok(["keys", "show", keyId], env)).spent_usd as number;
      assert.ok(spent > 0);
      // a monthly budget of exactly what was spent leaves nothing
      const limited = await ok(["keys", "set-budget", keyId, spent.toFixed(9), "--period", "month"], env);
      assert.equal(limited.left_usd, 0);
      const refused = await eventually("after keys set-budget", () => call(), code(429, "budget_exceeded"));
      assert.match(refused.body.error.message, /API key's budget/);
      await ok(["keys", "set-budget", keyId, "none"], env);
      await works("after keys set-budget none");
    });
  });
}
