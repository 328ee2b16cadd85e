// The gateway as an operator runs it: a child process started like `npm start`, first-start
// key, /healthz, /readyz, /metrics, and a graceful SIGTERM.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, before, describe, it } from "node:test";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const MAIN = join(import.meta.dirname, "..", "src", "main.ts");

interface Running {
  child: ChildProcess;
  stdout: string;
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
  const running: Running = { child, stdout: "", url: "", exit };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no listening line; output:\n${running.stdout}`)),
      15_000,
    );
    child.stdout!.on("data", (chunk: Buffer) => {
      running.stdout += chunk.toString();
      const m = running.stdout.match(/"url":"(http:\/\/[^"]+?)(\/v1)?"/);
      if (m && running.stdout.includes("gateway listening")) {
        running.url = m[1]!;
        clearTimeout(timer);
        resolve();
      }
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
  it("never loses the call record: SIGKILL after the answer, the record is on disk", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-kill-"));
    try {
      const gw = await serve({ GATEWAY_DATA_DIR: dir });
      const key = await firstKey(gw);
      const ids: string[] = [];
      for (const stream of [false, true]) {
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
      const db = new DatabaseSync(join(dir, "gateway.sqlite"));
      try {
        const rows = db
          .prepare(`select request_id, status from call_records where request_id in (?, ?)`)
          .all(ids[0]!, ids[1]!);
        assert.equal(rows.length, 2, "both completed calls survived the crash");
        assert.ok(rows.every((r) => r.status === "ok"));
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
