// Requests and tokens per minute, per key and per account: 429 with its own code and
// retry-after, OpenAI's x-ratelimit-* headers on every /v1 answer, per-key overrides from the
// CLI, and live figures (reserved tokens, windows) in `keys show` while a call is in flight.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import OpenAI, { RateLimitError } from "openai";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const run = promisify(execFile);
const MAIN = join(import.meta.dirname, "..", "src", "main.ts");

const plans = [
  {
    id: "default",
    quota_tokens: 1_000_000_000,
    models: [TEST_MODEL, "demo"],
    rate_limits: { key: { rpm: 3, tpm: 100_000 }, account: { rpm: 5 } },
  },
  { id: "tokens", quota_tokens: 1_000_000_000, models: [TEST_MODEL], rate_limits: { key: { tpm: 300 } } },
];

/** The CLI child must see the same plans as the gateway: the config goes in a file (JSON is YAML). */
const configDir = mkdtempSync(join(tmpdir(), "gw-rate-config-"));
function cliEnv(gateway: TestGateway, upstream: MockUpstream): NodeJS.ProcessEnv {
  const file = join(configDir, `${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, JSON.stringify(testConfig(upstream, { plans })));
  return {
    ...process.env,
    GATEWAY_CONFIG: file,
    GATEWAY_DATA_DIR: dirname(gateway.gateway.deps.store.location),
  };
}

describe("rate limits", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;

  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({ upstream, config: { plans } });
  });
  after(async () => {
    await gw.close();
    await upstream.close();
    rmSync(configDir, { recursive: true, force: true });
  });

  const chat = (secret: string, content = "hi mock:tokens=5", max_tokens = 10) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: TEST_MODEL, max_tokens, messages: [{ role: "user", content }] }),
    });
  /** a call `chat` cannot make: another model, a malformed body */
  const post = (body: unknown, secret: string) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("a key's requests per minute: the 4th of 3 gets 429 rate_limit_exceeded with retry-after", async () => {
    const account = await gw.account("rpm");
    const { secret } = await gw.key(account);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await chat(secret);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      assert.equal(res.headers.get("x-ratelimit-limit-requests"), "3");
      remaining.push(res.headers.get("x-ratelimit-remaining-requests")!);
      assert.equal(res.headers.get("x-ratelimit-limit-tokens"), "100000");
      assert.match(res.headers.get("x-ratelimit-reset-requests")!, /^\d+(ms|s|m\d+s)$/);
    }
    assert.deepEqual(remaining, ["2", "1", "0"]);
    const refused = await chat(secret);
    assert.equal(refused.status, 429);
    const body = (await refused.json()) as any;
    assert.equal(body.error.code, "rate_limit_exceeded");
    assert.equal(body.error.type, "requests");
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    assert.ok(Number(refused.headers.get("retry-after-ms")) > 0);
    assert.equal(refused.headers.get("x-ratelimit-remaining-requests"), "0");
    const record = await gw.gateway.deps.store.db
      .selectFrom("call_records")
      .select(["status", "http_status", "error_code", "total_tokens"])
      .where("request_id", "=", refused.headers.get("x-request-id")!)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      { ...record },
      {
        status: "error",
        http_status: 429,
        error_code: "rate_limit_exceeded",
        total_tokens: 0,
      },
    );
  });

  it("the SDK sees a RateLimitError; GET /v1/models is a request like any other", async () => {
    const account = await gw.account("sdk");
    const { secret } = await gw.key(account);
    const client = new OpenAI({ apiKey: secret, baseURL: gw.baseURL, maxRetries: 0 });
    const models = await client.models.list().withResponse();
    assert.equal(models.response.headers.get("x-ratelimit-remaining-requests"), "2");
    for (let i = 0; i < 2; i++)
      await client.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "x" }] });
    await assert.rejects(
      client.chat.completions.create({ model: TEST_MODEL, messages: [{ role: "user", content: "x" }] }),
      (err: unknown) => err instanceof RateLimitError && err.code === "rate_limit_exceeded",
    );
  });

  // Second audit: GET and DELETE /v1/responses/{id} and GET /v1/models served 12 of 12 on a
  // key limited to 5 a minute. Reads cost the gateway and the store a request too.
  it("reads count: the model list, a model, a stored response's GET and DELETE; the 4th is 429", async () => {
    const account = await gw.account("reads");
    const { secret } = await gw.key(account);
    const get = (path: string, method = "GET") =>
      fetch(`${gw.baseURL}${path}`, { method, headers: { authorization: `Bearer ${secret}` } });
    const statuses: number[] = [];
    for (const [path, method] of [
      ["/models", "GET"],
      [`/models/${TEST_MODEL}`, "GET"],
      ["/responses/resp_none", "GET"],
      ["/responses/resp_none", "DELETE"],
      ["/models", "GET"],
    ] as const) {
      const res = await get(path, method);
      await res.arrayBuffer();
      statuses.push(res.status);
      if (res.status === 429) {
        assert.equal((await get(path, method)).status, 429);
        assert.ok(Number(res.headers.get("retry-after")) >= 1);
      }
    }
    // 3 a minute for the key: two model reads and one response read; the rest are refused
    assert.deepEqual(statuses, [200, 200, 404, 429, 429]);
  });

  // A refused call costs the gateway a request too; free, made-up model names could be sent
  // without end (the outside audit, issue #17).
  it("refused calls count against the key's requests per minute", async () => {
    // the default plan: 3 a minute for the key
    const account = await gw.account("refused-calls");
    const key = await gw.key(account);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await post(
        { model: "no-such-model", messages: [{ role: "user", content: "hi" }] },
        key.secret,
      );
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [404, 404, 404, 429, 429]);
    const bad = await post({ model: "x".repeat(500), messages: [] }, key.secret);
    assert.equal(bad.status, 429, "malformed calls are limited before they are looked at");
  });

  it("the account's limit holds across its keys", async () => {
    const account = await gw.account("shared");
    const keys = [await gw.key(account), await gw.key(account)];
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await chat(keys[i % 2]!.secret);
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429], "5 a minute for the account, 3 per key");
  });

  it("tokens per minute: the estimate is taken up front and the unused part given back", async () => {
    const account = await gw.account("tpm", { plan: "tokens" });
    const { secret } = await gw.key(account);
    // holds prompt + 200; uses prompt + 5, so most comes back
    const first = await chat(secret, "hi mock:tokens=5", 200);
    assert.equal(first.status, 200);
    await first.arrayBuffer();
    assert.ok(Number(first.headers.get("x-ratelimit-remaining-tokens")) < 100, "the estimate was taken");
    const second = await chat(secret, "hi mock:tokens=5", 200);
    assert.equal(second.status, 200, "the unused estimate came back");
    await second.arrayBuffer();
    const big = await chat(secret, "hi mock:tokens=5", 280);
    assert.equal(big.status, 429);
    assert.equal(((await big.json()) as any).error.type, "tokens");
  });

  it("keys set-rate overrides the plan for one key, on the running gateway", async () => {
    const account = await gw.account("override");
    const key = await gw.key(account);
    const env = cliEnv(gw, upstream);
    const { stdout } = await run(
      process.execPath,
      [MAIN, "keys", "set-rate", key.id, "--rpm", "1", "--json"],
      {
        env,
      },
    );
    const shown = JSON.parse(stdout);
    assert.deepEqual(shown.rate_limits, { rpm: 1, tpm: 100_000, source: { rpm: "key", tpm: "plan" } });
    let limited = false;
    for (let i = 0; i < 60 && !limited; i++) {
      const res = await chat(key.secret);
      await res.arrayBuffer();
      limited = res.headers.get("x-ratelimit-limit-requests") === "1";
      if (!limited) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(limited, "the override reached the running gateway");
  });

  it("keys show reports the tokens reserved by a call in flight and the rate windows", async () => {
    // long enough that the call is still in flight when a loaded machine has started the CLI
    const slow = await startMockUpstream({ latencyMs: 15_000 });
    const providers = testConfig(slow).providers.map((p) =>
      "timeouts" in p
        ? { ...p, timeouts: { connect_ms: 2_000, first_byte_ms: 30_000, idle_ms: 30_000, total_ms: 60_000 } }
        : p,
    );
    const local = await startTestGateway({ upstream: slow, config: { plans, providers } }).catch(
      async (err) => {
        await slow.close();
        throw err;
      },
    );
    try {
      const account = await local.account("live");
      const key = await local.key(account);
      const env = cliEnv(local, slow);
      const inFlight = fetch(`${local.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: TEST_MODEL,
          max_tokens: 50,
          messages: [{ role: "user", content: "slow" }],
        }),
      });
      let shown: any;
      for (let i = 0; i < 40; i++) {
        shown = JSON.parse(
          (await run(process.execPath, [MAIN, "keys", "show", key.id, "--json"], { env })).stdout,
        );
        if (shown.reserved_tokens > 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(shown.reserved_tokens >= 50, `reserved ${shown.reserved_tokens} while the call runs`);
      assert.equal(shown.rate_windows.requests.limit, 3);
      assert.equal(shown.rate_windows.requests.remaining, 2);
      const res = await inFlight;
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      const account_ = JSON.parse(
        (await run(process.execPath, [MAIN, "accounts", "show", account, "--json"], { env })).stdout,
      );
      assert.equal(account_.rate_limits.rpm, 5);
      assert.ok("reserved_tokens" in account_);
    } finally {
      await local.close();
      await slow.close();
    }
  });
});
