// Liveness and readiness (docs/health.md): /livez answers while the process does, /readyz says
// which check failed; and an outage of Redis or of the store, real (a redis-server stopped and
// started, the connections to PostgreSQL cut by a proxy), is logged once when it begins and
// once when it ends, without stack traces, however long it lasts.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI, { APIError } from "openai";
import { startTestGateway, TEST_MODEL, type TestGateway } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";
import { storeSuite } from "./support/postgres.ts";
import { type RedisServer, startRedisServer } from "./support/redis-instance.ts";
import { until } from "./support/stream-assertions.ts";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.ts";

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** The gateway's log lines from index `from` on, parsed. */
function linesSince(gw: TestGateway, from: number): LogLine[] {
  return gw.logs
    .slice(from)
    .flatMap((chunk) => chunk.split("\n"))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LogLine);
}

async function readyz(gw: TestGateway): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`${gw.origin}/readyz`);
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

/** /readyz's answer once its status is `status`. */
async function readyzOnce(gw: TestGateway, status: number, what: string) {
  let answer = await readyz(gw);
  await until(
    async () => {
      answer = await readyz(gw);
      return answer.status === status;
    },
    what,
    15_000,
  );
  return answer;
}

const WARN = 40;

describe("/livez and /readyz", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => {
    await gw?.close();
  });

  it("/livez and /healthz: the process answers", async () => {
    for (const path of ["/livez", "/healthz"]) {
      const res = await fetch(`${gw.origin}${path}`);
      assert.equal(res.status, 200, path);
      assert.deepEqual(await res.json(), { status: "ok" });
    }
  });

  it("/readyz: ready, each check named; no Redis check without Redis", async () => {
    const ready = await readyz(gw);
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, {
      status: "ready",
      checks: { store: "ok", migrations: "ok", draining: false },
    });
  });

  it("/readyz: 503 naming the migration the store lacks (a store restored from before it), ready again once applied", async () => {
    const db = gw.gateway.deps.store.db as any;
    const last = await db
      .selectFrom("kysely_migration")
      .selectAll()
      .orderBy("name", "desc")
      .executeTakeFirstOrThrow();
    await db.deleteFrom("kysely_migration").where("name", "=", last.name).execute();
    try {
      const unready = await readyz(gw);
      assert.equal(unready.status, 503);
      assert.deepEqual(unready.body, {
        status: "unready",
        checks: { store: "ok", migrations: `pending: ${last.name}`, draining: false },
      });
    } finally {
      await db.insertInto("kysely_migration").values(last).execute();
    }
    assert.equal((await readyz(gw)).status, 200);
  });
});

describe("Redis stopped, then started again (PostgreSQL + Redis)", await storeSuite("postgres+redis"), () => {
  let upstream: MockUpstream;
  let redis: RedisServer;
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    upstream = await startMockUpstream();
    redis = await startRedisServer();
    gw = await startTestGateway({
      upstream,
      store: "postgres+redis",
      redisUrl: redis.url,
      // debug: the failures told once at warn level are still seen, each, below it; and a
      // lease renewed five times a second, each renewal meeting the outage
      config: { log_level: "debug", ledger: { lease_ms: 600 } },
    });
    const key = await gw.key(await gw.account("redis-outage"));
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: key.secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await redis?.close();
    await upstream?.close();
  });

  const chat = () =>
    client.chat.completions.create({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "hi mock:tokens=3" }],
    });

  it("/readyz names Redis while it is down, calls get 503 ledger_unavailable, and the log says so once each way, without stack traces", async () => {
    assert.deepEqual((await readyz(gw)).body, {
      status: "ready",
      checks: { store: "ok", redis: "ok", migrations: "ok", draining: false },
    });
    assert.ok((await chat()).choices[0]!.message.content);
    const mark = gw.logs.length;

    await redis.stop();
    const unready = await readyzOnce(gw, 503, "/readyz says unready");
    assert.equal(unready.body.status, "unready");
    assert.equal(unready.body.checks.store, "ok");
    assert.equal(unready.body.checks.draining, false);
    assert.match(unready.body.checks.redis, /^unreachable: /);
    await assert.rejects(chat(), (err: unknown) => {
      assert.ok(err instanceof APIError);
      assert.equal(err.status, 503);
      assert.equal(err.code, "ledger_unavailable");
      return true;
    });
    // every part that uses Redis met the outage again and again: the cooldowns' connections
    // reconnecting, the lease's sweeps
    const met = (msg: RegExp) => linesSince(gw, mark).filter((l) => l.level < WARN && msg.test(l.msg)).length;
    await until(
      () => met(/cooldowns follow/) >= 3 && met(/renew the ledger lease/) >= 3,
      "failures met",
      15_000,
    );
    assert.match((await readyz(gw)).body.checks.redis, /^unreachable: /, "still down");

    await redis.start();
    await readyzOnce(gw, 200, "/readyz says ready again");
    await until(
      async () => {
        try {
          await chat();
          return true;
        } catch {
          return false;
        }
      },
      "calls are answered again",
      15_000,
    );

    const lines = linesSince(gw, mark);
    const down = lines.filter((l) => /^Redis is unreachable/.test(l.msg));
    const up = lines.filter((l) => l.msg === "Redis answers again");
    assert.equal(down.length, 1, "one line when it went down");
    assert.equal(down[0]!.level, WARN);
    assert.equal(down[0]!.dependency, "redis");
    assert.match(String(down[0]!.reason), /ECONNREFUSED|closed|writeable/);
    assert.equal(up.length, 1, "one line when it came back");
    assert.equal(up[0]!.level, 30, "info");
    const loud = lines.filter((l) => l.level >= WARN);
    for (const l of loud)
      assert.ok(!JSON.stringify(l).includes('"stack"'), `no stack trace: ${JSON.stringify(l)}`);
    // besides the two, at most the notice that Redis came back empty (its state is rebuilt)
    assert.ok(
      loud.every((l) => l === down[0] || /Redis lost the shared ledger/.test(l.msg)),
      loud.map((l) => l.msg).join("\n"),
    );
  });
});

describe("the store cut off, then back (PostgreSQL)", await storeSuite("postgres"), () => {
  let proxy: TcpProxy;
  let gw: TestGateway;
  let password: string;
  before(async () => {
    const pgAdmin = new URL(process.env.TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
    proxy = await startTcpProxy({ host: pgAdmin.hostname, port: Number(pgAdmin.port || 5432) });
    password = "";
    gw = await startTestGateway({
      store: "postgres",
      // a password in the URL (the local server trusts, and ignores it) that no answer may show
      databaseUrl: (url) => {
        const through = new URL(url);
        through.host = `127.0.0.1:${proxy.port}`;
        through.password ||= "pw-never-shown-7f3a";
        password = decodeURIComponent(through.password);
        return through.toString();
      },
      config: { log_level: "debug", ledger: { lease_ms: 600 } },
    });
  });
  after(async () => {
    await proxy?.restore();
    await gw?.close();
    await proxy?.close();
  });

  it("/readyz names the store while it is cut off, without its URL or password; the log says so once each way, without stack traces", async () => {
    assert.equal((await readyz(gw)).status, 200);
    const mark = gw.logs.length;

    await proxy.cut();
    const unready = await readyzOnce(gw, 503, "/readyz says unready");
    assert.equal(unready.body.status, "unready");
    assert.match(unready.body.checks.store, /^unreachable: /);
    assert.match(unready.body.checks.migrations, /^unknown: /);
    assert.ok(!unready.text.includes(password), "no password in the answer");
    assert.ok(!unready.text.includes("postgres://"), "no URL in the answer");
    // the lease and the revision poll met the outage again and again
    const met = () =>
      linesSince(gw, mark).filter((l) => l.level < WARN && /renew the ledger lease/.test(l.msg)).length;
    await until(() => met() >= 3, "failures met", 15_000);

    await proxy.restore();
    await readyzOnce(gw, 200, "/readyz says ready again");
    await until(
      () => linesSince(gw, mark).some((l) => l.msg === "the store answers again"),
      "the line saying it is back",
    );
    const lines = linesSince(gw, mark);
    const down = lines.filter((l) => /^the store is unreachable/.test(l.msg));
    assert.equal(down.length, 1, "one line when it went down");
    assert.equal(down[0]!.level, WARN);
    assert.equal(down[0]!.dependency, "store");
    assert.equal(lines.filter((l) => l.msg === "the store answers again" && l.level === 30).length, 1);
    const loud = lines.filter((l) => l.level >= WARN);
    assert.deepEqual(
      loud.map((l) => l.msg),
      [down[0]!.msg],
      "nothing else at warn level or above",
    );
    assert.ok(!JSON.stringify(lines).includes(password), "no password in the log");
  });
});
