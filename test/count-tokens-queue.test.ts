// The counting thread under load, through a real gateway: count_tokens calls whose clients
// left are dropped, accounts take turns, the queue is bounded per account and in all (429 and
// 503 with retry-after, in the Messages API's envelope), count_tokens counts against the
// key's rate limits, and the demo model counts the audit's whitespace prompts off the event
// loop (150,000 newlines had frozen a default install for 12 s through it).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { countPromptTokens } from "../src/tokens/count.ts";
import { estimator } from "../src/tokens/estimator.ts";
import { longestStall } from "./support/event-loop.ts";
import { startTestGateway, type TestGateway, testConfig } from "./support/gateway.ts";
import { until } from "./support/stream-assertions.ts";

const PER_ACCOUNT = 4;
const TOTAL = 6;

/**
 * Text the tokenizer has not seen, slow to count (random letters, no spaces: a few ms per
 * 1,024 characters, so 1,200,000 take a second or more), different for each seed.
 */
function slowText(length: number, seed: number): string {
  let state = seed * 7919 + 1;
  const codes: number[] = [];
  while (codes.length < length) {
    state = (state * 1103515245 + 12345) % 2147483648;
    codes.push(97 + (state % 26));
  }
  let text = "";
  for (let at = 0; at < codes.length; at += 10_000)
    text += String.fromCharCode(...codes.slice(at, at + 10_000));
  return text;
}

let seed = 0;
const LONG = 1_200_000;

describe("the counting thread's queue", () => {
  let gw: TestGateway;
  const secrets: Record<string, string> = {};

  before(async () => {
    const defaults = testConfig(undefined);
    gw = await startTestGateway({
      config: {
        server: { ...defaults.server, body_limit_bytes: 8 * 1_048_576 },
        counting: { queue_per_account: PER_ACCOUNT, queue_total: TOTAL },
        plans: [
          ...(defaults.plans ?? []),
          { id: "limited", quota_tokens: 1_000_000_000, models: ["demo"], rate_limits: { key: { rpm: 3 } } },
        ],
      },
    });
    for (const name of ["a", "b", "c"]) secrets[name] = (await gw.key(await gw.account(name))).secret;
  });
  after(async () => {
    await gw?.close();
  });

  const countTokens = (secret: string, content: string, signal?: AbortSignal) =>
    fetch(`${gw.baseURL}/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": secret, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content }] }),
      ...(signal ? { signal } : {}),
    });

  /** `n` long counts of `account`'s, sent and queued; abort() leaves them. */
  async function longCounts(account: string, n: number) {
    const client = new AbortController();
    const before = estimator.queued;
    const answers = Array.from({ length: n }, () =>
      countTokens(secrets[account]!, slowText(LONG, ++seed), client.signal).then(
        async (res) => ({ status: res.status, body: await res.text() }),
        (err: Error) => ({ status: 0, body: err.name }),
      ),
    );
    await until(() => estimator.queued >= before + n, `${n} counts of ${account} queued`, 10_000);
    return { answers, abort: () => client.abort() };
  }

  /** A one-word count; its answer and how long it took. */
  async function shortCount(account: string) {
    const started = performance.now();
    const res = await countTokens(secrets[account]!, "hello");
    const body = await res.text();
    return { res, body, ms: performance.now() - started };
  }

  it("drops the counts of clients that left: another account's one-word count does not wait for them", async () => {
    await shortCount("b"); // the worker is started and has loaded the tokenizer
    const { answers, abort } = await longCounts("a", 4);
    abort();
    // Counted as a whole, these four take several seconds each (the audit: 55.6 s).
    const short = await shortCount("b");
    assert.equal(short.res.status, 200, short.body);
    assert.ok(JSON.parse(short.body).input_tokens > 0);
    assert.ok(short.ms < 1_500, `the one-word count took ${short.ms.toFixed(0)} ms`);
    for (const answer of await Promise.all(answers)) assert.equal(answer.status, 0, "the client left");
    await until(() => estimator.queued === 0, "the abandoned counts are gone", 1_000);
    await sleep(50);
    assert.deepEqual(
      gw.logs.filter((line) => line.includes('"level":50')),
      [],
      "a client that left is not logged as the gateway's failure",
    );
  });

  it("takes the accounts in turns: one account's long counts do not hold up another's short one", async () => {
    const { answers, abort } = await longCounts("a", 3);
    let answered = 0;
    for (const answer of answers) void answer.then(() => answered++);
    const short = await shortCount("b");
    assert.equal(short.res.status, 200, short.body);
    assert.ok(short.ms < 1_500, `the one-word count took ${short.ms.toFixed(0)} ms`);
    assert.equal(answered, 0, "no long count was done before the short one");
    abort();
    await Promise.all(answers);
    await until(() => estimator.queued === 0, "the abandoned counts are gone", 1_000);
  });

  it("refuses a count past its account's share (429) or past the total (503), with retry-after, in Anthropic's envelope", async () => {
    const a = await longCounts("a", PER_ACCOUNT);
    const full = await shortCount("a");
    assert.equal(full.res.status, 429, full.body);
    assert.equal(full.res.headers.get("retry-after"), "1");
    const fullBody = JSON.parse(full.body);
    assert.equal(fullBody.type, "error");
    assert.equal(fullBody.error.type, "rate_limit_error");
    assert.equal(fullBody.error.details.error_code, "count_queue_full");
    // another account still has room, until the queue holds TOTAL
    const b = await longCounts("b", TOTAL - PER_ACCOUNT);
    const busy = await shortCount("c");
    assert.equal(busy.res.status, 503, busy.body);
    assert.equal(busy.res.headers.get("retry-after"), "1");
    const busyBody = JSON.parse(busy.body);
    assert.equal(busyBody.type, "error");
    assert.equal(busyBody.error.type, "api_error");
    assert.equal(busyBody.error.details.error_code, "count_queue_busy");
    a.abort();
    b.abort();
    await Promise.all([...a.answers, ...b.answers]);
    await until(() => estimator.queued === 0, "the abandoned counts are gone", 1_000);
    const again = await shortCount("c");
    assert.equal(again.res.status, 200, again.body);
  });

  it("counts count_tokens against the key's requests per minute, in the same bucket as its calls", async () => {
    const secret = (await gw.key(await gw.account("limited", { plan: "limited" }))).secret;
    for (let i = 0; i < 3; i++) {
      const ok = await shortCount("a").then(() => countTokens(secret, "hello"));
      assert.equal(ok.status, 200, await ok.text());
      assert.equal(ok.headers.get("x-ratelimit-remaining-requests"), String(2 - i));
    }
    const limited = await countTokens(secret, "hello");
    const body = JSON.parse(await limited.text());
    assert.equal(limited.status, 429);
    assert.equal(body.error.type, "rate_limit_error");
    assert.equal(body.error.details.error_code, "rate_limit_exceeded");
    assert.ok(Number(limited.headers.get("retry-after")) >= 1);
    const call = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(call.status, 429, "the counts used up the key's requests");
    await call.text();
  });

  it("counts the audit's whitespace prompts through the demo model and count_tokens without stalling the event loop", async () => {
    const chat = (content: string) =>
      fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secrets.c}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "demo", messages: [{ role: "user", content }] }),
      });
    // the demo loads the tokenizer here for its answer (a one-time stall, docs/decisions/0023-counting-thread-under-load.md)
    assert.equal((await chat("warm up")).status, 200);
    for (const content of ["\n".repeat(150_000), "\u00a0".repeat(100_000)]) {
      const { value: answer, stall } = await longestStall(async () => {
        const res = await chat(content);
        return { status: res.status, body: (await res.json()) as any };
      });
      assert.equal(answer.status, 200);
      assert.equal(answer.body.usage.prompt_tokens, countPromptTokens([{ role: "user", content }]));
      assert.ok(
        stall < 300,
        `the event loop stalled ${stall.toFixed(0)} ms (demo, ${content.length} characters)`,
      );
      const counted = await longestStall(async () => {
        const res = await countTokens(secrets.c!, content);
        return { status: res.status, body: (await res.json()) as any };
      });
      assert.equal(counted.value.status, 200);
      assert.ok(counted.value.body.input_tokens > 0);
      assert.ok(counted.stall < 300, `the event loop stalled ${counted.stall.toFixed(0)} ms (count_tokens)`);
    }
  });
});
