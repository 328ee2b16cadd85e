// The gateway as an operator runs it: a child process started like `npm start`, first-start
// key, /healthz, /readyz, /metrics, and a graceful SIGTERM; and the cost counters /metrics
// carries, against a gateway in this process.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, it } from "node:test";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const MAIN = join(import.meta.dirname, "..", "src", "main.ts");

interface Running {
  child: ChildProcess;
  stdout: string;
  /** the logs, with --json (stdout is then only serve's answer) */
  stderr: string;
  url: string;
  exit: Promise<number | null>;
}

/** Starts `node src/main.ts serve` and waits for the line that says where it listens. */
async function serve(env: Record<string, string>, args: string[] = []): Promise<Running> {
  const child = spawn(process.execPath, [MAIN, "serve", ...args], {
    env: { ...process.env, PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const running: Running = { child, stdout: "", stderr: "", url: "", exit };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no listening line; output:\n${running.stdout}`)),
      15_000,
    );
    const look = () => {
      const m = running.stdout.match(/"url":"(http:\/\/[^"]+?)(\/v1)?"/);
      if (m && (running.stdout + running.stderr).includes("gateway listening")) {
        running.url = m[1]!;
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", (chunk: Buffer) => {
      running.stdout += chunk.toString();
      look();
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      running.stderr += chunk.toString();
      look();
    });
    child.once("exit", () => reject(new Error(`exited early:\n${running.stdout}`)));
  });
  return running;
}

/** The first stdout line matching `pattern`, once it has been written. */
function stdoutLine(running: Running, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const line = running.stdout.split("\n").find((l) => pattern.test(l));
      if (line === undefined) return false;
      running.child.stdout!.off("data", look);
      clearTimeout(timer);
      resolve(line);
      return true;
    };
    const timer = setTimeout(
      () => reject(new Error(`no line matching ${pattern}:\n${running.stdout}`)),
      15_000,
    );
    if (!look()) running.child.stdout!.on("data", look);
  });
}

/** The first start's key, from the file the logged line names (stdout is not a terminal here). */
async function firstKey(running: Running): Promise<string> {
  const logged = await stdoutLine(running, /^\{.*"msg":"first start/);
  const file = JSON.parse(logged).file as string;
  return readFileSync(file, "utf8").match(/sk-[A-Za-z0-9]{43}/)![0];
}

describe("first start on an empty store", () => {
  let dir: string;
  let gw: Running;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "gw-ops-"));
    gw = await serve({ GATEWAY_DATA_DIR: dir });
  });
  after(async () => {
    gw.child.kill("SIGTERM");
    await gw.exit;
    rmSync(dir, { recursive: true, force: true });
  });

  it("stdout is not a terminal: the key and the admin password go to a file only its owner reads, named in the log", async () => {
    const logged = await stdoutLine(gw, /^\{.*"msg":"first start/);
    const file = JSON.parse(logged).file as string;
    assert.equal(typeof file, "string", logged);
    assert.equal(statSync(file).mode & 0o777, 0o600, "readable and writable by the owner only");
    const text = readFileSync(file, "utf8");
    const keys = text.match(/sk-[A-Za-z0-9]{43}/g) ?? [];
    assert.ok(keys.length >= 1, "the key is in the file");
    assert.equal(new Set(keys).size, 1, "one key");
    assert.match(text, /curl http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
    const password = text.match(/password: +(\S+)/)?.[1];
    assert.ok(password, "the admin password is in the file");
    // stdout, the log stream, carries neither secret
    assert.ok(!gw.stdout.includes(keys[0]!), "stdout does not carry the key");
    assert.ok(!gw.stdout.includes(password), "stdout does not carry the password");
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys[0]}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "Hello!" }] }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as any;
    assert.match(body.choices[0].message.content, /demo model/);
    const login = await fetch(`${gw.url}/api/console/login`, {
      method: "POST",
      headers: { origin: gw.url, "content-type": "application/json" },
      body: JSON.stringify({ email: "admin@localhost", password }),
    });
    assert.equal(login.status, 200);
  });

  it("does not print a key again on the next start", async () => {
    const second = await serve({ GATEWAY_DATA_DIR: dir, PORT: "0" }, ["--json"]);
    try {
      assert.match(second.stdout, /"first_key":null/);
      assert.doesNotMatch(second.stdout, /sk-[A-Za-z0-9]{43}/);
    } finally {
      second.child.kill("SIGTERM");
      assert.equal(await second.exit, 0);
    }
  });

  it("answers /healthz, /readyz and /metrics", async () => {
    const health = await fetch(`${gw.url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: "ok" });
    const ready = await fetch(`${gw.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(((await ready.json()) as any).store, "sqlite");
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /gateway_http_requests_total\{route="\/v1\/chat\/completions",status="200"\} 1/);
    assert.match(metrics, /gateway_http_request_duration_seconds_bucket/);
    assert.match(metrics, /gateway_upstream_duration_seconds_count\{provider="demo",outcome="ok"\} 1/);
    assert.match(
      metrics,
      /gateway_tokens_total\{model="demo",kind="completion",api="chat.completions"\} \d+/,
    );
    assert.match(metrics, /gateway_calls_total\{api="chat.completions",status="ok"\} 1/);
  });
});

describe("SIGTERM", () => {
  let dir: string;
  let upstream: MockUpstream;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "gw-term-"));
    upstream = await startMockUpstream({ latencyMs: 800 });
  });
  after(async () => {
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("finishes in-flight requests, refuses new ones, flushes records and exits 0", async () => {
    const config = join(dir, "gateway.yaml");
    writeFileSync(
      config,
      [
        "providers:",
        "  - id: mock",
        "    type: openai-compatible",
        `    base_url: ${upstream.url}`,
        "models:",
        "  - id: slow",
        "    provider: mock",
        "plans:",
        "  - id: default",
        "    quota_tokens: 100000",
        "    models: [slow]",
      ].join("\n"),
    );
    const gw = await serve({ GATEWAY_DATA_DIR: dir, GATEWAY_CONFIG: config });
    const key = await firstKey(gw);
    const call = (stream: boolean) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "slow",
          stream,
          messages: [{ role: "user", content: "hi mock:tokens=5" }],
        }),
      }).then(async (r) => ({ status: r.status, text: await r.text() }));
    const inFlight = [call(false), call(true)];
    // wait until both reached the upstream, then ask the gateway to stop
    for (let i = 0; i < 100 && upstream.inFlight() < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(upstream.inFlight(), 2);
    gw.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 100));
    const late = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then(
      (r) => r.status,
      () => "refused",
    );
    assert.ok(late === 503 || late === "refused", `a new request after SIGTERM is not served (got ${late})`);
    const [plain, streamed] = await Promise.all(inFlight);
    assert.equal(plain!.status, 200);
    assert.equal(streamed!.status, 200);
    assert.match(streamed!.text, /data: \[DONE\]\n\n$/);
    assert.equal(await gw.exit, 0);

    const db = new DatabaseSync(join(dir, "gateway.sqlite"));
    try {
      const rows = db.prepare("select status, total_tokens from call_records where status = 'ok'").all();
      assert.equal(rows.length, 2, "both finished calls are on disk");
      const used = db.prepare("select sum(used_tokens) as used from api_keys").get() as { used: number };
      const total = rows.reduce((s, r) => s + Number(r.total_tokens), 0);
      assert.equal(used.used, total);
    } finally {
      db.close();
    }
  });
});

describe("a crash right after a response", () => {
  // The default SQLite store journals each record before the answer and commits behind it
  // (src/records/journal.ts): what a kill -9 leaves in the journal is in the store after
  // the next start, once, with the counters it adds to.
  it("never loses the call record: SIGKILL after the answer, the record is in the store after a restart, once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-kill-"));
    try {
      // a commit interval that outlasts the calls: the kill finds them journaled, not committed
      const config = join(dir, "gateway.yaml");
      writeFileSync(
        config,
        [
          "store:",
          "  records_commit_ms: 1000",
          "providers:",
          "  - id: demo",
          "    type: demo",
          "models:",
          "  - id: demo",
          "    provider: demo",
          "plans:",
          "  - id: default",
          "    quota_tokens: 100000",
          "    models: [demo]",
        ].join("\n"),
      );
      const env = { GATEWAY_DATA_DIR: dir, GATEWAY_CONFIG: config };
      const gw = await serve(env);
      const key = await firstKey(gw);
      const ids: string[] = [];
      for (const stream of [false, true, false, true]) {
        const res = await fetch(`${gw.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "demo",
            stream,
            messages: [{ role: "user", content: "remember me" }],
          }),
        });
        await res.text();
        assert.equal(res.status, 200);
        ids.push(res.headers.get("x-request-id")!);
      }
      gw.child.kill("SIGKILL");
      await gw.exit;
      const journaled = readdirSync(join(dir, "records-journal"))
        .map((f) => readFileSync(join(dir, "records-journal", f), "utf8"))
        .join("");
      const read = () => {
        const db = new DatabaseSync(join(dir, "gateway.sqlite"));
        try {
          const rows = db
            .prepare(
              `select request_id, status, total_tokens from call_records where request_id in (?, ?, ?, ?)`,
            )
            .all(...ids);
          const used = db.prepare("select sum(used_tokens) as used from api_keys").get() as { used: number };
          const all = db.prepare("select sum(total_tokens) as t, count(*) as n from call_records").get() as {
            t: number;
            n: number;
          };
          return { rows, used: Number(used.used), recorded: Number(all.t), count: Number(all.n) };
        } finally {
          db.close();
        }
      };
      const before = read();
      assert.equal(before.count, 0, "killed before its first commit");
      assert.equal(before.used, 0);
      for (const id of ids) assert.ok(journaled.includes(id), `${id} is journaled`);

      const again = await serve(env);
      again.child.kill("SIGTERM");
      await again.exit;
      const after = read();
      assert.equal(after.rows.length, 4, "every completed call survived the crash");
      assert.ok(after.rows.every((r) => r.status === "ok"));
      assert.equal(after.count, 4, "replayed once");
      assert.ok(after.recorded > 0);
      assert.equal(after.used, after.recorded, "the replay added each record to its counters");
      assert.match(again.stdout, /replayed the call-record journal/);
      assert.deepEqual(
        readdirSync(join(dir, "records-journal")),
        [],
        "the journal is empty after a clean stop",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("cost counters on /metrics", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await startMockUpstream();
    const base = testConfig(upstream);
    gw = await startTestGateway({
      upstream,
      config: {
        // $3 a million fresh prompt tokens, $0.30 cache reads, $15 output; the plan pays 80 %
        models: base.models.map((m) =>
          m.id === TEST_MODEL ? { ...m, pricing: { input: 3, cached_input: 0.3, output: 15 } } : m,
        ),
        plans: base.plans.map((p) => (p.id === "default" ? { ...p, price_multiplier: 0.8 } : p)),
      },
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  /** The value of one sample of /metrics, or undefined when it has none. */
  async function sample(name: string, labels: string): Promise<number | undefined> {
    const text = await (await fetch(`${gw.origin}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
  }

  async function chat(secret: string, model: string, content: string, stream = false): Promise<void> {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model, stream, messages: [{ role: "user", content }] }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.text();
  }

  it("gateway_cost_usd_total{model} and gateway_account_cost_usd_total{account} move by each call's cost", async () => {
    const account = await gw.account("metered");
    const key = await gw.key(account);
    const byModel = `model="${TEST_MODEL}"`;
    const byAccount = `account="${account}"`;
    assert.equal(await sample("gateway_cost_usd_total", byModel), undefined, "nothing charged yet");

    // 7 prompt tokens (the mock counts words), 3 of them cache reads, and 10 output tokens:
    // (4 × $3 + 3 × $0.30 + 10 × $15) per million × 0.8 = $0.00013032
    await chat(key.secret, TEST_MODEL, "pay for these five words mock:tokens=10 mock:cache");
    const first = 130_320;
    assert.equal(await sample("gateway_cost_usd_total", byModel), first / 1e9);
    assert.equal(await sample("gateway_account_cost_usd_total", byAccount), first / 1e9);

    // streamed, 2 prompt tokens and 5 output: (2 × $3 + 5 × $15) per million × 0.8 = $0.0000648
    await chat(key.secret, TEST_MODEL, "again mock:tokens=5", true);
    const second = 64_800;
    // the counters add dollars as floats; the records hold the exact nanodollars
    assert.equal(await sample("gateway_cost_usd_total", byModel), first / 1e9 + second / 1e9);
    assert.equal(await sample("gateway_account_cost_usd_total", byAccount), first / 1e9 + second / 1e9);
    const charged = await gw.gateway.deps.store.db
      .selectFrom("call_records")
      .select("cost_nanos")
      .where("account_id", "=", account)
      .orderBy("created_at")
      .execute();
    assert.deepEqual(
      charged.map((r) => Number(r.cost_nanos)),
      [first, second],
    );

    // an unpriced model costs nothing and moves no cost counter
    await chat(key.secret, "demo", "free mock:tokens=3");
    assert.equal(await sample("gateway_cost_usd_total", 'model="demo"'), undefined);
    assert.equal(await sample("gateway_account_cost_usd_total", byAccount), first / 1e9 + second / 1e9);
  });

  it("gateway_calls_total and gateway_tokens_total count each client API under its own api label", async () => {
    const key = await gw.key(await gw.account("by-api"));
    const calls = (api: string) => sample("gateway_calls_total", `api="${api}",status="ok"`);
    const tokens = (api: string, kind: string) =>
      sample("gateway_tokens_total", `model="${TEST_MODEL}",kind="${kind}",api="${api}"`);
    const was = {
      chat: (await calls("chat.completions")) ?? 0,
      messages: (await calls("messages")) ?? 0,
      responses: (await calls("responses")) ?? 0,
      messagesOut: (await tokens("messages", "completion")) ?? 0,
      responsesOut: (await tokens("responses", "completion")) ?? 0,
    };

    const messages = await fetch(`${gw.baseURL}/messages`, {
      method: "POST",
      headers: { "x-api-key": key.secret, "content-type": "application/json" },
      body: JSON.stringify({
        model: TEST_MODEL,
        max_tokens: 50,
        messages: [{ role: "user", content: "anthropic's way mock:tokens=4" }],
      }),
    });
    assert.equal(messages.status, 200, await messages.clone().text());
    assert.equal(((await messages.json()) as { usage: { output_tokens: number } }).usage.output_tokens, 4);
    assert.equal(await calls("messages"), was.messages + 1);
    assert.equal(await tokens("messages", "completion"), was.messagesOut + 4);
    assert.equal((await calls("responses")) ?? 0, was.responses, "the Responses series did not move");

    const responses = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: TEST_MODEL, input: "openai's new way mock:tokens=6" }),
    });
    assert.equal(responses.status, 200, await responses.clone().text());
    assert.equal(((await responses.json()) as { usage: { output_tokens: number } }).usage.output_tokens, 6);
    assert.equal(await calls("responses"), was.responses + 1);
    assert.equal(await tokens("responses", "completion"), was.responsesOut + 6);
    assert.equal(await calls("messages"), was.messages + 1);
    // neither call moved chat completions' series
    assert.equal((await calls("chat.completions")) ?? 0, was.chat);
  });
});
