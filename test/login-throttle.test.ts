// The console's login throttle against lockouts (second outside audit, item 4), over real HTTP
// from more than one client address (127.0.0.2 is loopback too): wrong passwords from one
// address do not refuse the right password from another; guesses from one address back off
// (429, a retry-after that doubles); two instances on one PostgreSQL store count every attempt;
// and the operator chooses the first admin's e-mail (config, environment).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { createAccount } from "../src/accounts/accounts.ts";
import { createUser } from "../src/accounts/users.ts";
import { LOGIN_LIMITS } from "../src/auth/login-limiter.ts";
import { configSchema } from "../src/config/cross-check.ts";
import { ConfigError } from "../src/config/load.ts";
import { createLogger } from "../src/observability/logger.ts";
import { type Gateway, startGateway } from "../src/server.ts";
import { type StoreKind, startTestGateway, type TestGateway, testConfig } from "./support/gateway.ts";
import { createTestDatabase, needsPostgres, storeSuite, type TestDatabase } from "./support/postgres.ts";

const STORES: StoreKind[] = (process.env.TEST_STORES ?? "sqlite,postgres")
  .split(",")
  .map((s) => s.trim())
  .filter((s): s is StoreKind => s === "sqlite" || s === "postgres");

/** Two client addresses of this machine: every 127.x.y.z is loopback on Linux. */
const A = "127.0.0.1";
const B = "127.0.0.2";

interface Answer {
  status: number;
  code: string | undefined;
  retryAfter: number | undefined;
}

/** POST /api/console/login from the client address `from` (node:http can bind one; fetch cannot). */
function login(origin: string, email: string, password: string, from = A): Promise<Answer> {
  const body = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const req = request(
      `${origin}/api/console/login`,
      {
        method: "POST",
        localAddress: from,
        agent: false,
        headers: { origin, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => {
          const retry = res.headers["retry-after"];
          resolve({
            status: res.statusCode!,
            code: text ? JSON.parse(text)?.error?.code : undefined,
            retryAfter: retry === undefined ? undefined : Number(retry),
          });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quiet = () =>
  createLogger(
    "warn",
    new Writable({
      write(_c, _e, cb) {
        cb();
      },
    }),
  );

let users = 0;
async function user(gw: Gateway, password = "the-right-password-1"): Promise<string> {
  const account = await createAccount(gw.deps.store.db, { name: `acme-${randomUUID()}`, plan_id: "default" });
  const email = `victim${++users}-${Date.now()}@example.test`;
  await createUser(gw.deps.store.db, { account_id: account.id, email, role: "member", password });
  return email;
}

for (const store of STORES) {
  describe(`login throttle, not lockout (${store} store)`, await storeSuite(store), () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway({ store });
    });
    after(async () => {
      await gw?.close();
    });

    test("five wrong passwords from address A do not stop the right password from address B", async () => {
      const email = await user(gw.gateway);
      for (let i = 0; i < 5; i++)
        assert.equal((await login(gw.origin, email, `wrong-${i}`, A)).status, 401, `wrong password ${i + 1}`);
      // A is throttled now, for a moment
      const fromA = await login(gw.origin, email, "the-right-password-1", A);
      assert.equal(fromA.status, 429);
      assert.equal(fromA.code, "login_rate_limited");
      // B is not: the right password logs in
      const fromB = await login(gw.origin, email, "the-right-password-1", B);
      assert.equal(fromB.status, 200, `the right password from B was refused: ${JSON.stringify(fromB)}`);
      // and A, once it has waited its retry-after, too
      await sleep(fromA.retryAfter! * 1000);
      assert.equal((await login(gw.origin, email, "the-right-password-1", A)).status, 200);
    });

    test("guesses from one address back off: 429 with a retry-after that doubles", async () => {
      const email = await user(gw.gateway);
      for (let i = 0; i < 5; i++) assert.equal((await login(gw.origin, email, `wrong-${i}`, A)).status, 401);
      const waits: number[] = [];
      for (let round = 0; round < 3; round++) {
        const refused = await login(gw.origin, email, `too-soon-${round}`, A);
        assert.equal(refused.status, 429, `round ${round}`);
        assert.equal(refused.code, "login_rate_limited");
        waits.push(refused.retryAfter!);
        // a backoff, not a lockout: the first wait is a second, not 15 minutes
        assert.ok(waits[0]! <= 1, `the first retry-after is ${waits[0]} s`);
        // refused attempts are not counted: asking again at once is refused the same
        assert.equal((await login(gw.origin, email, `again-${round}`, A)).retryAfter, refused.retryAfter);
        await sleep(refused.retryAfter! * 1000);
        assert.equal((await login(gw.origin, email, `late-${round}`, A)).status, 401, `round ${round}`);
      }
      assert.deepEqual(waits, [1, 2, 4]);
    });
  });
}

describe("two gateways on one PostgreSQL store", await needsPostgres(), () => {
  let database: TestDatabase;
  let gateways: Gateway[] = [];
  before(async () => {
    database = await createTestDatabase();
    const config = configSchema.parse(
      testConfig(undefined, { store: { database_url: database.url }, log_level: "warn" }),
    );
    gateways = [
      await startGateway(config, { logger: quiet(), bootstrap: false }),
      await startGateway(config, { logger: quiet(), bootstrap: false }),
    ];
  });
  after(async () => {
    for (const g of gateways) await g.close();
    await database?.drop();
  });

  test("40 wrong logins spread over both instances are all counted: 5 are checked (and the backoff's), not 10", async () => {
    const email = await user(gateways[0]!);
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => login(gateways[i % 2]!.url, email, `wrong-${i}`)),
    );
    const ms = Date.now() - started;
    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 401 || s === 429).length, 40, statuses.join(","));
    // 5 free, and those the backoff (1 s, then 2 s, …) let through while the burst lasted: one
    // more on a loaded machine, where 40 password checks take seconds; each instance on its own
    // counted 5, so 10 were checked
    const checked = statuses.filter((s) => s === 401).length;
    const limit = LOGIN_LIMITS.pair.free + Math.floor(Math.log2(ms / LOGIN_LIMITS.baseMs + 1));
    assert.ok(checked >= 5 && checked <= limit, `${checked} checked in ${ms} ms: ${statuses.join(",")}`);
    // one more at each instance at once: at most one is checked, the other waits for its backoff
    const pair = await Promise.all(gateways.map((g) => login(g.url, email, "wrong-again")));
    assert.ok(
      pair.some((a) => a.status === 429) && pair.every((a) => a.status === 429 || a.status === 401),
      JSON.stringify(pair),
    );
    // and both let the right password in from another address
    for (const g of gateways)
      assert.equal((await login(g.url, email, "the-right-password-1", B)).status, 200);
  });
});

describe("the first admin's e-mail", () => {
  const dirs: string[] = [];
  const gateways: Gateway[] = [];
  after(async () => {
    for (const g of gateways) await g.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function firstStart(
    extra: Record<string, unknown>,
    env: Record<string, string> = {},
  ): Promise<Gateway> {
    const dir = mkdtempSync(join(tmpdir(), "gw-admin-"));
    dirs.push(dir);
    const config = configSchema.parse({ ...testConfig(undefined), store: { data_dir: dir }, ...extra });
    const g = await startGateway(config, { logger: quiet(), env });
    gateways.push(g);
    return g;
  }

  test("admin@localhost unless the operator chooses one", async () => {
    const g = await firstStart({});
    assert.equal(g.firstAdmin?.email, "admin@localhost");
    assert.equal((await login(g.url, "admin@localhost", g.firstAdmin!.password)).status, 200);
  });

  test("console.first_admin_email in the configuration", async () => {
    const g = await firstStart({ console: { first_admin_email: "Ops@Example.com" } });
    assert.equal(g.firstAdmin?.email, "ops@example.com");
    assert.equal((await login(g.url, "ops@example.com", g.firstAdmin!.password)).status, 200);
    assert.equal((await login(g.url, "admin@localhost", g.firstAdmin!.password)).status, 401);
  });

  test("GATEWAY_FIRST_ADMIN_EMAIL in the environment overrides the configuration", async () => {
    const g = await firstStart(
      { console: { first_admin_email: "ops@example.com" } },
      { GATEWAY_FIRST_ADMIN_EMAIL: "root@example.org" },
    );
    assert.equal(g.firstAdmin?.email, "root@example.org");
    assert.equal((await login(g.url, "root@example.org", g.firstAdmin!.password)).status, 200);
  });

  test("an e-mail that is not one is refused, naming where it came from", async () => {
    assert.throws(
      () => configSchema.parse({ ...testConfig(undefined), console: { first_admin_email: "nobody" } }),
      /first_admin_email/,
    );
    await assert.rejects(
      firstStart({}, { GATEWAY_FIRST_ADMIN_EMAIL: "not an e-mail" }),
      (err: Error) => err instanceof ConfigError && /GATEWAY_FIRST_ADMIN_EMAIL/.test(err.message),
    );
  });

  test("`npm start` with GATEWAY_FIRST_ADMIN_EMAIL shows that e-mail where it shows the password", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-admin-cli-"));
    dirs.push(dir);
    const main = join(import.meta.dirname, "..", "src", "main.ts");
    const child = spawn(process.execPath, [main, "serve", "--json"], {
      env: {
        ...process.env,
        // the embedded defaults, a SQLite store of its own
        GATEWAY_CONFIG: "",
        DATABASE_URL: "",
        REDIS_URL: "",
        HOST: "127.0.0.1",
        GATEWAY_DATA_DIR: dir,
        PORT: "0",
        LOG_LEVEL: "info",
        GATEWAY_FIRST_ADMIN_EMAIL: "you@example.com",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      // with --json, stdout is serve's one JSON answer and the logs are on stderr
      let out = "";
      let logs = "";
      const file = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no first-start line:\n${out}\n${logs}`)), 15_000);
        const look = () => {
          const line = logs.split("\n").find((l) => l.includes('"msg":"first start'));
          if (line && out.includes("\n")) {
            clearTimeout(timer);
            resolve(JSON.parse(line).file);
          }
        };
        child.stdout!.on("data", (d: Buffer) => {
          out += d.toString();
          look();
        });
        child.stderr!.on("data", (d: Buffer) => {
          logs += d.toString();
          look();
        });
        child.once("exit", () => reject(new Error(`exited early:\n${out}\n${logs}`)));
      });
      assert.match(out, /"first_admin":\{"email":"you@example.com"\}/);
      assert.match(readFileSync(file, "utf8"), /e-mail: +you@example\.com\n/);
    } finally {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  });
});
