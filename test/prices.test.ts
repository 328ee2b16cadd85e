// Prices (issue #18) end to end: the official SDK against a real gateway over each provider's
// mock. Every cost is worked out by hand from the token kinds the mock reports (USD per
// million tokens × tokens × 1,000 = nanodollars), never by the gateway's own code.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
// o200k_base, the encoding the gateway estimates with: counted here without the gateway's code
import { countTokens } from "gpt-tokenizer";
import OpenAI from "openai";
import { setBudget } from "../src/accounts/budgets.ts";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { MOCK_CACHE_READ, MOCK_CACHE_WRITE, startMockAnthropic } from "./support/mock-anthropic-upstream.ts";
import { MOCK_CACHED, startMockGemini } from "./support/mock-gemini-upstream.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

const KEYS = {
  ANTHROPIC_KEY: "sk-ant-test-0123456789",
  GEMINI_KEY: "gemini-test-0123456789",
  AZURE_KEY: "azure-test-0123456789",
};
/** nanodollars of `tokens` at `usdPerMillion` */
const nano = (tokens: number, usdPerMillion: number) => Math.round(tokens * usdPerMillion * 1_000);
/** the header's decimal dollars back to nanodollars */
const headerNanos = (h: string | null) => Math.round(Number(h) * 1e9);

describe("what each call costs", () => {
  let openai: MockUpstream;
  let anthropic: MockUpstream;
  let gemini: MockUpstream;
  let azure: MockUpstream;
  let gw: TestGateway;
  let client: OpenAI;
  /** the key of `client`, for the raw Messages API calls */
  let clientKey: string;
  let teamClient: OpenAI;

  before(async () => {
    openai = await startMockUpstream();
    anthropic = await startMockAnthropic({ apiKey: KEYS.ANTHROPIC_KEY });
    gemini = await startMockGemini({ apiKey: KEYS.GEMINI_KEY });
    azure = await startMockUpstream({ apiKey: KEYS.AZURE_KEY, azure: true });
    const base = testConfig(openai);
    gw = await startTestGateway({
      upstream: openai,
      env: KEYS,
      config: {
        providers: [
          ...base.providers,
          { id: "claude", type: "anthropic", base_url: anthropic.url, api_key_env: "ANTHROPIC_KEY" },
          { id: "gem", type: "gemini", base_url: gemini.url, api_key_env: "GEMINI_KEY" },
          {
            id: "az",
            type: "azure-openai",
            base_url: azure.url.replace(/\/v1$/, ""),
            api_key_env: "AZURE_KEY",
            api_version: "2024-10-21",
          },
        ],
        models: [
          {
            ...base.models.find((m) => m.id === TEST_MODEL)!,
            pricing: { input: 2.5, output: 10, cached_input: 1.25 },
          },
          {
            id: "claude-priced",
            provider: "claude",
            upstream_model: "claude-sonnet-4-5",
            pricing: { input: 3, output: 15, cached_input: 0.3, cache_write: 3.75 },
          },
          // no pricing: the table's prices for claude-sonnet-4-5 ($3 / $15, cache $0.30 / $3.75)
          { id: "claude-table", provider: "claude", upstream_model: "claude-sonnet-4-5" },
          {
            id: "gemini-priced",
            provider: "gem",
            upstream_model: "gemini-2.5-flash",
            pricing: { input: 0.3, output: 2.5, cached_input: 0.03 },
          },
          // an Azure deployment's name is the operator's own: priced in the configuration
          {
            id: "azure-priced",
            provider: "az",
            upstream_model: "my-gpt4o-deployment",
            pricing: { input: 2.5, output: 10, cached_input: 1.25 },
          },
          // a name no price table knows
          { id: "unpriced", provider: "mock", upstream_model: "our-own-finetune" },
        ],
        plans: [
          {
            id: "default",
            quota_tokens: 1_000_000_000,
            models: [
              TEST_MODEL,
              "claude-priced",
              "claude-table",
              "gemini-priced",
              "azure-priced",
              "unpriced",
            ],
          },
          { id: "team", quota_tokens: 1_000_000_000, price_multiplier: 0.8, models: ["claude-priced"] },
        ],
      },
    });
    const key = await gw.key(await gw.account("prices"));
    clientKey = key.secret;
    client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    const teamKey = await gw.key(await gw.account("team", { plan: "team" }));
    teamClient = new OpenAI({ apiKey: teamKey.secret, baseURL: gw.baseURL, maxRetries: 0 });
  });

  after(async () => {
    await gw?.close();
    await Promise.all([openai?.close(), anthropic?.close(), gemini?.close(), azure?.close()]);
  });

  async function priced(c: OpenAI, model: string, text: string) {
    const { data, response } = await c.chat.completions
      .create({ model, messages: [{ role: "user", content: text }] })
      .withResponse();
    const record = await gw.record(response.headers.get("x-request-id")!);
    return { data, record, header: response.headers.get("x-gateway-cost-usd") };
  }

  test("OpenAI-compatible: fresh input, cache reads and output, each at its own price", async () => {
    const { data, record, header } = await priced(
      client,
      TEST_MODEL,
      "one two three four five mock:tokens=7 mock:cache",
    );
    const usage = data.usage!;
    assert.equal(usage.prompt_tokens_details?.cached_tokens, 3);
    assert.equal(record.cached_tokens, 3);
    const expected = nano(usage.prompt_tokens - 3, 2.5) + nano(3, 1.25) + nano(usage.completion_tokens, 10);
    assert.equal(record.cost_nanos, expected);
    assert.equal(record.cost_source, "config");
    assert.equal(headerNanos(header), expected, "x-gateway-cost-usd says the same, in dollars");
  });

  test("Anthropic: cache writes cost more than fresh input, cache reads less", async () => {
    const { data, record, header } = await priced(
      client,
      "claude-priced",
      "alpha beta gamma mock:cache mock:tokens=5",
    );
    assert.equal(record.cache_write_tokens, MOCK_CACHE_WRITE);
    assert.equal(record.cached_tokens, MOCK_CACHE_READ);
    const prompt = data.usage!.prompt_tokens;
    const fresh = prompt - MOCK_CACHE_WRITE - MOCK_CACHE_READ;
    assert.ok(fresh > 0);
    const expected =
      nano(fresh, 3) +
      nano(MOCK_CACHE_READ, 0.3) +
      nano(MOCK_CACHE_WRITE, 3.75) +
      nano(data.usage!.completion_tokens, 15);
    assert.equal(record.cost_nanos, expected);
    assert.equal(headerNanos(header), expected);
  });

  test("Gemini: thinking tokens are output tokens, cached content at the cache price", async () => {
    const { data, record } = await priced(
      client,
      "gemini-priced",
      "red green blue mock:thinking=9 mock:cache mock:tokens=4",
    );
    assert.equal(record.reasoning_tokens, 9);
    assert.equal(record.cached_tokens, MOCK_CACHED);
    const u = data.usage!;
    assert.ok(u.completion_tokens >= 9, "completion includes the thinking");
    const expected =
      nano(u.prompt_tokens - MOCK_CACHED, 0.3) + nano(MOCK_CACHED, 0.03) + nano(u.completion_tokens, 2.5);
    assert.equal(record.cost_nanos, expected);
  });

  test("Azure OpenAI: cached tokens from OpenAI's usage details at the cache price", async () => {
    const { data, record } = await priced(
      client,
      "azure-priced",
      "one two three four mock:tokens=4 mock:cache",
    );
    assert.equal(record.cached_tokens, 3);
    const u = data.usage!;
    assert.equal(
      record.cost_nanos,
      nano(u.prompt_tokens - 3, 2.5) + nano(3, 1.25) + nano(u.completion_tokens, 10),
    );
  });

  test("a model without pricing takes the table's prices when its upstream name is known", async () => {
    const { data, record } = await priced(client, "claude-table", "alpha beta mock:cache mock:tokens=3");
    assert.equal(record.cost_source, "table");
    const fresh = data.usage!.prompt_tokens - MOCK_CACHE_WRITE - MOCK_CACHE_READ;
    const expected =
      nano(fresh, 3) +
      nano(MOCK_CACHE_READ, 0.3) +
      nano(MOCK_CACHE_WRITE, 3.75) +
      nano(data.usage!.completion_tokens, 15);
    assert.equal(record.cost_nanos, expected);
  });

  test("a model nobody priced costs 0 and says so", async () => {
    const { record, header } = await priced(client, "unpriced", "hello mock:tokens=3");
    assert.equal(record.cost_source, "unpriced");
    assert.equal(record.cost_nanos, 0);
    assert.ok(record.total_tokens > 0);
    assert.equal(header, "0");
  });

  test("the plan's multiplier scales every token kind", async () => {
    const { data, record } = await priced(teamClient, "claude-priced", "alpha beta gamma mock:tokens=5");
    const u = data.usage!;
    const expected =
      Math.round(u.prompt_tokens * 3 * 0.8 * 1_000) + Math.round(u.completion_tokens * 15 * 0.8 * 1_000);
    assert.equal(record.cost_nanos, expected);
  });

  // A local estimate counts a prompt as OpenAI's cookbook does: the text's tokens, 4 for each
  // message's framing and 3 priming the reply.
  const framed = (...texts: string[]) => 3 + texts.reduce((n, t) => n + 4 + countTokens(t), 0);

  test("an answer without upstream usage is charged from the local estimate, at the model's prices", async () => {
    const text = "count these words here mock:tokens=6 mock:no-usage";
    const { data, record, header } = await priced(client, TEST_MODEL, text);
    assert.equal(record.usage_source, "estimated");
    const prompt = framed(text);
    const completion = countTokens(data.choices[0]!.message.content!);
    assert.ok(completion > 0);
    assert.deepEqual([record.prompt_tokens, record.completion_tokens], [prompt, completion]);
    const expected = nano(prompt, 2.5) + nano(completion, 10);
    assert.equal(record.cost_nanos, expected);
    assert.equal(record.cost_source, "config");
    assert.equal(headerNanos(header), expected, "the header says what the estimate cost");
  });

  test("a stream without upstream usage is charged from the estimate of what it delivered", async () => {
    const text = "stream these words here mock:tokens=5 mock:no-usage";
    const { data: stream, response } = await client.chat.completions
      .create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: text }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    let content = "";
    for await (const chunk of stream) content += chunk.choices[0]?.delta?.content ?? "";
    const record = await gw.record(response.headers.get("x-request-id")!);
    assert.equal(record.usage_source, "estimated");
    const prompt = framed(text);
    const completion = countTokens(content);
    assert.deepEqual([record.prompt_tokens, record.completion_tokens], [prompt, completion]);
    assert.equal(record.cost_nanos, nano(prompt, 2.5) + nano(completion, 10));
  });

  test("through the Messages API: the cost header and the record, from the usage the answer reports", async () => {
    const res = await fetch(`${gw.baseURL}/messages`, {
      method: "POST",
      headers: { "x-api-key": clientKey, "content-type": "application/json" },
      body: JSON.stringify({
        model: "claude-priced",
        max_tokens: 100,
        messages: [{ role: "user", content: "alpha beta gamma mock:cache mock:tokens=5" }],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const { usage } = (await res.json()) as { usage: Record<string, number> };
    // Anthropic's input_tokens leave the cache reads and writes out
    assert.equal(usage.cache_read_input_tokens, MOCK_CACHE_READ);
    assert.equal(usage.cache_creation_input_tokens, MOCK_CACHE_WRITE);
    assert.ok(usage.input_tokens! > 0 && usage.output_tokens === 5);
    const expected =
      nano(usage.input_tokens!, 3) +
      nano(MOCK_CACHE_READ, 0.3) +
      nano(MOCK_CACHE_WRITE, 3.75) +
      nano(usage.output_tokens!, 15);
    assert.equal(headerNanos(res.headers.get("x-gateway-cost-usd")), expected);
    const record = await gw.record(res.headers.get("x-request-id")!);
    assert.equal(record.api, "messages");
    assert.equal(record.cost_nanos, expected);
  });

  test("through the Responses API: the cost header and the record, from the usage the answer reports", async () => {
    const { data, response } = await client.responses
      .create({ model: TEST_MODEL, input: "one two three four five mock:tokens=7 mock:cache" })
      .withResponse();
    const usage = data.usage!;
    // OpenAI's input_tokens include the cache reads
    const cached = usage.input_tokens_details.cached_tokens;
    assert.equal(cached, 3);
    assert.equal(usage.output_tokens, 7);
    const expected =
      nano(usage.input_tokens - cached, 2.5) + nano(cached, 1.25) + nano(usage.output_tokens, 10);
    assert.equal(headerNanos(response.headers.get("x-gateway-cost-usd")), expected);
    const record = await gw.record(response.headers.get("x-request-id")!);
    assert.equal(record.api, "responses");
    assert.equal(record.cost_nanos, expected);
  });

  test("a stream is costed the same, from the usage the upstream reported", async () => {
    const { data: stream, response } = await client.chat.completions
      .create({
        model: TEST_MODEL,
        messages: [{ role: "user", content: "one two mock:tokens=6" }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    const record = await gw.record(response.headers.get("x-request-id")!);
    assert.equal(record.cost_nanos, nano(usage!.prompt_tokens, 2.5) + nano(usage!.completion_tokens, 10));
  });
});

describe("money budgets", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  /** the gateway's clock: the test moves it across a month */
  let clock = Date.UTC(2026, 10, 30, 23, 0, 0);
  const PRICES = { input: 3, output: 15 };

  before(async () => {
    upstream = await startMockUpstream({ latencyMs: 5 });
    const base = testConfig(upstream);
    gw = await startTestGateway({
      upstream,
      now: () => clock,
      config: {
        models: base.models.map((m) => (m.id === TEST_MODEL ? { ...m, pricing: PRICES } : m)),
      },
    });
  });

  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const db = () => gw.gateway.deps.store.db;
  /** A budget as the CLI sets it; the key cache is dropped at once rather than at the next revision poll. */
  const setBudgetNow = async (
    ...args: Parameters<typeof setBudget> extends [unknown, ...infer R] ? R : never
  ) => {
    await setBudget(db(), ...args);
    gw.gateway.deps.keys.clear();
  };

  test("100 concurrent calls never spend more than the key's budget; refusals only when the minimum cannot fit", async () => {
    const account = await gw.account("budget-load");
    const key = await gw.key(account);
    // $0.05: a few dozen calls of ~1,000 prompt bytes and up to 256 output tokens
    const budget = 50_000_000;
    await setBudgetNow("api_keys", key.id, budget, "none");
    const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    const prompt = `${"word ".repeat(40)}mock:tokens=200`;
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () =>
        client.chat.completions
          .create({ model: TEST_MODEL, messages: [{ role: "user", content: prompt }] })
          .withResponse(),
      ),
    );
    const ok = results.filter((r) => r.status === "fulfilled");
    const refused = results.flatMap((r) =>
      r.status === "rejected" ? [r.reason as InstanceType<typeof OpenAI.APIError>] : [],
    );
    assert.ok(ok.length > 0, "some calls fit");
    assert.ok(refused.length > 0, "the budget ran out under the load");
    for (const e of refused) {
      assert.equal(e.status, 429);
      assert.ok(
        e.code === "budget_exceeded" || e.code === "limit_held",
        `refused with ${e.code}: ${e.message}`,
      );
    }
    const row = await db()
      .selectFrom("api_keys")
      .select(["spent_nanos", "budget_nanos"])
      .where("id", "=", key.id)
      .executeTakeFirstOrThrow();
    const records = await db()
      .selectFrom("call_records")
      .select(["cost_nanos", "prompt_tokens", "total_tokens"])
      .where("key_id", "=", key.id)
      .execute();
    const sum = records.reduce((s, r) => s + Number(r.cost_nanos), 0);
    assert.equal(Number(row.spent_nanos), sum, "the records' costs add up to what the key spent");
    assert.ok(Number(row.spent_nanos) <= budget, `spent ${row.spent_nanos} ≤ budget ${budget}`);
    // No false refusal: what is left cannot pay for the smallest call the gateway would hold
    // (the prompt bound at the input price plus 16 output tokens at the output price).
    const left = budget - Number(row.spent_nanos);
    const promptBound = Buffer.byteLength(prompt) + 64; // well above any prompt bound of this request
    assert.ok(left < nano(promptBound, 3) + nano(16, 15), `${left} nanodollars were left unused`);
    // and once everything settled, the next call is refused with the reason and when it resets
    const err = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: "user", content: prompt }] })
      .catch((e: InstanceType<typeof OpenAI.APIError>) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.code, "budget_exceeded");
    assert.match(
      err.message,
      /This API key's budget cannot cover this request \(\$0\.\d+ left; it does not reset\)/,
    );
  });

  test("an exhausted budget refuses the Messages and the Responses API in each one's own envelope", async () => {
    const account = await gw.account("budget-apis");
    const key = await gw.key(account);
    await setBudgetNow("api_keys", key.id, 1_000_000_000, "none");
    const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    await client.chat.completions.create({
      model: TEST_MODEL,
      messages: [{ role: "user", content: "spend it mock:tokens=8" }],
    });
    const { spent_nanos } = await db()
      .selectFrom("api_keys")
      .select("spent_nanos")
      .where("id", "=", key.id)
      .executeTakeFirstOrThrow();
    assert.ok(Number(spent_nanos) > 0);
    // what it spent is all it had: nothing is left
    await setBudgetNow("api_keys", key.id, Number(spent_nanos), "none");
    const message = /This API key's budget cannot cover this request \(\$0 left; it does not reset\)/;

    const messages = await fetch(`${gw.baseURL}/messages`, {
      method: "POST",
      headers: { "x-api-key": key.secret, "content-type": "application/json" },
      body: JSON.stringify({
        model: TEST_MODEL,
        max_tokens: 16,
        messages: [{ role: "user", content: "hi mock:tokens=4" }],
      }),
    });
    assert.equal(messages.status, 429);
    assert.equal(messages.headers.get("x-should-retry"), "false");
    const anthropic = (await messages.json()) as {
      type: string;
      error: { type: string; message: string; details: { error_code: string } };
    };
    assert.equal(anthropic.type, "error");
    assert.equal(anthropic.error.type, "rate_limit_error");
    assert.equal(anthropic.error.details.error_code, "budget_exceeded");
    assert.match(anthropic.error.message, message);

    const err = await client.responses
      .create({ model: TEST_MODEL, input: "hi mock:tokens=4", max_output_tokens: 16 })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, `expected an APIError, got ${String(err)}`);
    assert.equal(err.status, 429);
    assert.equal(err.code, "budget_exceeded");
    assert.equal(err.type, "insufficient_quota");
    assert.match(err.message, message);

    const refused = await db()
      .selectFrom("call_records")
      .select(["api", "status", "http_status", "error_code", "cost_nanos"])
      .where("key_id", "=", key.id)
      .where("error_code", "=", "budget_exceeded")
      .orderBy("created_at")
      .execute();
    assert.deepEqual(
      refused.map((r) => [r.api, r.status, Number(r.http_status), Number(r.cost_nanos)]).sort(),
      [
        ["messages", "error", 429, 0],
        ["responses", "error", 429, 0],
      ],
    );
    const settled = await db()
      .selectFrom("api_keys")
      .select("spent_nanos")
      .where("id", "=", key.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(settled.spent_nanos), Number(spent_nanos), "the refusals spent nothing");
  });

  test("the budget lowers max_tokens when it leaves room for less output than asked", async () => {
    const account = await gw.account("budget-cut");
    const key = await gw.key(account);
    const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    // room for the prompt bound and about 100 output tokens at $15/Mtok
    const prompt = "a b c mock:tokens=5000";
    await setBudgetNow("api_keys", key.id, nano(200, 3) + nano(100, 15), "none");
    const { data } = await client.chat.completions
      .create({ model: TEST_MODEL, messages: [{ role: "user", content: prompt }], max_tokens: 250 })
      .withResponse();
    assert.equal(data.choices[0]!.finish_reason, "length");
    const sent = upstream.requests.at(-1)!.body as { max_tokens?: number; max_completion_tokens?: number };
    const bound = sent.max_tokens ?? sent.max_completion_tokens!;
    assert.ok(bound < 250 && bound >= 16, `the output bound sent upstream was cut to ${bound}`);
    assert.ok(data.usage!.completion_tokens <= bound);
  });

  test("a monthly budget resets at the start of the next month (UTC)", async () => {
    clock = Date.UTC(2026, 10, 30, 23, 0, 0);
    const account = await gw.account("budget-month");
    const key = await gw.key(account);
    const client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
    const ask = () =>
      client.chat.completions
        .create({
          model: TEST_MODEL,
          messages: [{ role: "user", content: "hi mock:tokens=16" }],
          max_tokens: 16,
        })
        .withResponse();
    await setBudgetNow("accounts", account, 1_000_000_000, "month");
    const first = await gw.record((await ask()).response.headers.get("x-request-id")!);
    // The smallest hold of this request: its prompt bound at $3 (plus the rounding allowance)
    // and 16 output tokens at $15. The budget now leaves one nanodollar less than that.
    const promptBound = first.reserved_tokens - 16;
    const minimum = Math.ceil(promptBound * 3 * 1_000) + 3 + nano(16, 15);
    await setBudgetNow("accounts", account, first.cost_nanos + minimum - 1, "month");
    const err = await ask().catch((e: InstanceType<typeof OpenAI.APIError>) => e);
    assert.ok(err instanceof OpenAI.APIError, "the second call no longer fits in November");
    assert.equal(err.code, "budget_exceeded");
    assert.match(err.message, /The account's budget .* it resets at 2026-12-01T00:00:00\.000Z/);

    clock = Date.UTC(2026, 11, 1, 0, 0, 1); // one second into December
    await ask(); // fits again
    const row = await db()
      .selectFrom("accounts")
      .select(["spent_nanos", "month_spent_nanos", "spent_month"])
      .where("id", "=", account)
      .executeTakeFirstOrThrow();
    const records = await db()
      .selectFrom("call_records")
      .select("cost_nanos")
      .where("account_id", "=", account)
      .execute();
    const costs = records.map((r) => Number(r.cost_nanos)).filter((c) => c > 0);
    assert.equal(costs.length, 2, "one call charged in November, one in December");
    assert.equal(row.spent_month, "2026-12");
    assert.equal(Number(row.month_spent_nanos), costs[1], "December counts December's call only");
    assert.equal(Number(row.spent_nanos), costs[0]! + costs[1]!, "the total keeps both");
  });
});
