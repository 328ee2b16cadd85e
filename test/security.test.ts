// Findings of the outside security audit (issue #17) against a real gateway over HTTP: the
// login throttle under concurrency, console e-mails, tickets citing other accounts' requests,
// the console's Host check (DNS rebinding) and the /metrics token.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { LOGIN_LIMITS } from "../src/auth/login-limiter.ts";
import { configSchema } from "../src/config/cross-check.ts";
import { startGateway } from "../src/server.ts";
import { startTestGateway, type TestGateway, testConfig } from "./support/gateway.ts";

interface Res {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** A console API call from the gateway's own origin unless `origin` or `host` says otherwise. */
async function consoleCall(
  gw: TestGateway,
  method: string,
  path: string,
  opts: { cookie?: string; body?: unknown; origin?: string; host?: string } = {},
): Promise<Res> {
  const url = new URL(`${gw.origin}/api/console${path}`);
  const headers: Record<string, string> = { origin: opts.origin ?? gw.origin };
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const res = opts.host
    ? await rawRequest(url, method, { ...headers, host: opts.host }, body)
    : await fetch(url, { method, headers, body });
  const text = await res.text();
  // every console answer is JSON, an error envelope too; 204s are empty
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

/** fetch() will not send a Host header of our choosing; node:http will. */
async function rawRequest(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<Response> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode!, headers: h }));
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

function refused(res: Res, status: number, code: string, param?: string | null): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${res.text}`);
  assert.equal(res.body?.error?.code, code, res.text);
  if (param !== undefined) assert.equal(res.body.error.param, param, res.text);
}

describe("login throttle under concurrency", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => {
    await gw?.close();
  });

  test("40 concurrent wrong logins for one user: at most the limit are evaluated, the rest are throttled", async () => {
    const acme = await gw.account("acme");
    const victim = await gw.consoleUser(acme, { password: "the-right-password-1" });
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        consoleCall(gw, "POST", "/login", { body: { email: victim.email, password: `wrong-${i}` } }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    const evaluated = statuses.filter((s) => s === 401).length;
    const throttled = statuses.filter((s) => s === 429).length;
    assert.equal(evaluated + throttled, 40, `only 401 and 429 expected: ${statuses.join(",")}`);
    // the free ones, and those the backoff (1 s, then 2 s, …) let through while the burst lasted
    const ms = Date.now() - started;
    const limit = LOGIN_LIMITS.pair.free + Math.floor(Math.log2(ms / LOGIN_LIMITS.baseMs + 1));
    assert.ok(
      evaluated <= limit,
      `${evaluated} wrong passwords were checked in ${ms} ms; the limit is ${limit}`,
    );
    for (const a of answers.filter((x) => x.status === 429)) refused(a, 429, "login_rate_limited");
  });
});

describe("console e-mail addresses", () => {
  let gw: TestGateway;
  let admin: { cookie: string };
  let acme: string;
  before(async () => {
    gw = await startTestGateway();
    acme = await gw.account("acme");
    admin = await gw.consoleUser(await gw.account("ops"), { role: "admin" });
  });
  after(async () => {
    await gw?.close();
  });

  const create = (email: string) =>
    consoleCall(gw, "POST", "/admin/users", {
      cookie: admin.cookie,
      body: { email, account_id: acme, role: "member", password: "a-good-password-1" },
    });

  test("control and invisible characters are refused, naming the field", async () => {
    assert.equal((await create("dup@acme.test")).status, 201);
    for (const email of [
      "dup@acme.test\u0000",
      "d\u0000up@acme.test",
      "dup\u200b@acme.test",
      "\u0007dup@acme.test",
    ])
      refused(await create(email), 400, "invalid_request", "email");
  });

  test("a look-alike in another Unicode form is the same user, not a second one", async () => {
    // full-width letters fold to ASCII (NFKC) before the uniqueness check
    refused(await create("ＤＵＰ@acme.test"), 409, "conflict");
    const users = await consoleCall(gw, "GET", `/admin/users?account=${acme}`, { cookie: admin.cookie });
    assert.deepEqual(
      users.body.data.map((u: { email: string }) => u.email),
      ["dup@acme.test"],
    );
  });

  test("logging in with a control character appended does not reach the user", async () => {
    const res = await consoleCall(gw, "POST", "/login", {
      body: { email: "dup@acme.test\u0000", password: "a-good-password-1" },
    });
    refused(res, 401, "invalid_credentials");
    const folded = await consoleCall(gw, "POST", "/login", {
      body: { email: "ｄｕｐ@acme.test", password: "a-good-password-1" },
    });
    assert.equal(folded.status, 200, folded.text);
  });
});

describe("tickets cite only their own account's requests", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => {
    await gw?.close();
  });

  /** One demo call with the account's key; its request id. */
  async function callOf(accountId: string): Promise<string> {
    const { secret } = await gw.key(accountId);
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hello" }] }),
    });
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    await gw.gateway.deps.records.flush();
    return res.headers.get("x-request-id")!;
  }

  test("another account's request id is refused naming the field; the account's own is kept", async () => {
    const victim = await gw.account("victim");
    const reporter = await gw.account("reporter");
    const theirs = await callOf(victim);
    const ours = await callOf(reporter);
    const owner = await gw.consoleUser(reporter, { role: "owner" });
    const ticket = (request_id: string) =>
      consoleCall(gw, "POST", "/tickets", {
        cookie: owner.cookie,
        body: { kind: "problem", subject: "it broke", description: "see the request", request_id },
      });
    refused(await ticket(theirs), 400, "invalid_request", "request_id");
    const ok = await ticket(ours);
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.ticket.request_id, ours);
    // an id the store has no record of (pruned, or refused before it had an account) is kept as given
    assert.equal((await ticket("req_unknown0000000")).status, 201);
  });
});

describe("console Host check (DNS rebinding)", () => {
  let gw: TestGateway;
  let port: string;
  before(async () => {
    gw = await startTestGateway({
      config: { server: { host: "127.0.0.1", port: 0, allowed_hosts: ["gateway.example"] } },
    });
    port = new URL(gw.origin).port;
  });
  after(async () => {
    await gw?.close();
  });

  const login = (host: string) =>
    consoleCall(gw, "POST", "/login", {
      host,
      origin: `http://${host}`,
      body: { email: "nobody@example.test", password: "not-the-password" },
    });

  test("a page on another name that resolves to the gateway is refused, though its Origin matches its Host", async () => {
    refused(await login(`evil.example:${port}`), 403, "host_not_allowed");
    refused(await login("evil.example"), 403, "host_not_allowed");
  });

  test("loopback names, IP addresses and server.allowed_hosts pass on to the login itself", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `gateway.example:${port}`])
      refused(await login(host), 401, "invalid_credentials");
  });
});

describe("/metrics token", () => {
  const TOKEN = "metrics-token-0123456789abcdef";
  const scrape = (gw: TestGateway, authorization?: string) =>
    fetch(`${gw.origin}/metrics`, { headers: authorization ? { authorization } : {} });

  test("without metrics.token_env it is open, as before", async () => {
    const gw = await startTestGateway();
    try {
      const res = await scrape(gw);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /gateway_http_requests_total/);
    } finally {
      await gw.close();
    }
  });

  test("with metrics.token_env: 401 without the token or with another, 200 with it", async () => {
    const gw = await startTestGateway({
      config: { metrics: { token_env: "GATEWAY_METRICS_TOKEN" } },
      env: { GATEWAY_METRICS_TOKEN: TOKEN },
    });
    try {
      for (const authorization of [undefined, "Bearer wrong-token", `Basic ${TOKEN}`, TOKEN]) {
        const res = await scrape(gw, authorization);
        const text = await res.text();
        assert.equal(res.status, 401, `${authorization}: ${text}`);
        assert.equal(JSON.parse(text).error.code, "metrics_unauthenticated");
        assert.equal(res.headers.get("www-authenticate"), "Bearer");
      }
      const res = await scrape(gw, `Bearer ${TOKEN}`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /gateway_http_requests_total/);
      assert.ok(!gw.logs.join("").includes(TOKEN), "the token is never logged");
    } finally {
      await gw.close();
    }
  });

  test("a token_env that is not set stops the start instead of leaving /metrics open", async () => {
    const config = configSchema.parse({
      ...testConfig(undefined, { metrics: { token_env: "GATEWAY_METRICS_TOKEN" } }),
      store: { data_dir: "/nonexistent/never-opened" },
    });
    await assert.rejects(startGateway(config, { env: {}, bootstrap: false }), {
      name: "ConfigError",
      message: /GATEWAY_METRICS_TOKEN/,
    });
  });
});
