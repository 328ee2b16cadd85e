// Issue #30 item 4, upstream key pools, end to end: a real gateway in front of the OpenAI,
// Azure, Anthropic and Gemini mocks, each holding a provider account's several keys (some
// rate-limited, some unknown to it), the official openai SDK as the client. The keys are used
// in turn; a key the upstream rate-limits or refuses cools down and the call goes on at once
// with the next key, so it succeeds and the deployment is not cooled; every key rate-limited
// answers as one rate-limited key always did; the key states; and no key, nor more of it than
// its hint's last four characters, in any answer, record or log line.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import OpenAI, { APIError } from "openai";
import type { ConfigInput } from "../src/config/schema.ts";
import type { KeyState } from "../src/providers/types.ts";
import type { AttemptRecord } from "../src/records/draft.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";
import { startMockAnthropic } from "./support/mock-anthropic-upstream.ts";
import { startMockGemini } from "./support/mock-gemini-upstream.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

/** Keys of the upstream accounts, of the shapes each provider issues. */
const K = {
  turn1: "sk-proj-turn1-Xq7vB2mN8pL4",
  turn2: "sk-proj-turn2-Hc5wR9tY3kD6",
  turn3: "sk-proj-turn3-Jf2nV8sQ1zA5",
  limit1: "sk-proj-limit1-Pw4eT6yU0iO9",
  limit2: "sk-proj-limit2-Ga3sD5fG7hJ1",
  revoked: "sk-proj-revoked-Lz8xC4vB6nM2",
  good: "sk-proj-good-Qa1wS3eD5rF7",
  all1: "sk-proj-all1-Tg9yH2uJ4iK6",
  all2: "sk-proj-all2-Ol3pZ5xC7vB9",
  all3: "sk-proj-all3-Nm1qW3eR5tY7",
  single: "sk-proj-single-Ui8oP0aS2dF4",
  azure1: "0f3a9c2e7b1d4e6f8a0b2c4d6e8f1a3b",
  azure2: "7e5d3c1b9a8f6e4d2c0b1a3f5e7d9c2b",
  ant1: "sk-ant-api03-revokedKey-Rv4Kd9",
  ant2: "sk-ant-api03-workingKey-Wk7Ph2",
  gem1: "AIzaSyRevokedKey0000000000000Rk1",
  gem2: "AIzaSyWorkingKey1111111111111Wk2",
};

/** keys rate-limited at each upstream, as the tests set them */
const limited = new Set<string>();
const ENV = {
  POOL_TURN_1: K.turn1,
  POOL_TURN_2: K.turn2,
  POOL_LIMIT_1: K.limit1,
  POOL_LIMIT_2: K.limit2,
  POOL_ANT_1: K.ant1,
  POOL_ANT_2: K.ant2,
};

let openai: MockUpstream;
let azure: MockUpstream;
let anthropic: MockUpstream;
let gemini: MockUpstream;
let gw: TestGateway;
let client: OpenAI;
let keyId: string;
/** every answer the client got, as text */
const answers: string[] = [];

type ProviderInput = ConfigInput["providers"][number];

before(async () => {
  openai = await startMockUpstream({
    apiKey: [K.turn1, K.turn2, K.turn3, K.limit1, K.limit2, K.good, K.all1, K.all2, K.all3, K.single],
    rateLimitedKeys: limited,
  });
  azure = await startMockUpstream({ azure: true, apiKey: [K.azure1, K.azure2], rateLimitedKeys: limited });
  anthropic = await startMockAnthropic({ apiKey: [K.ant2], rateLimitedKeys: limited });
  gemini = await startMockGemini({ apiKey: [K.gem2], rateLimitedKeys: limited });
  const timeouts = { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 };
  const oa = (id: string, keys: Partial<ProviderInput>): ProviderInput => ({
    id,
    type: "openai-compatible",
    base_url: openai.url,
    timeouts,
    ...keys,
  });
  const providers: ProviderInput[] = [
    // api_key_env, then api_keys_env (one variable not set), then api_keys, as the store gives them
    oa("turn", {
      api_key_env: "POOL_TURN_1",
      api_keys_env: ["POOL_TURN_2", "POOL_NOT_SET"],
      api_keys: [K.turn3],
    }),
    oa("limit", { api_keys_env: ["POOL_LIMIT_1", "POOL_LIMIT_2"] }),
    oa("revoked", { api_keys: [K.revoked, K.good] }),
    oa("all", { api_keys: [K.all1, K.all2, K.all3] }),
    oa("single", { api_keys: [K.single] }),
    {
      id: "az",
      type: "azure-openai",
      base_url: azure.url.replace(/\/v1$/, ""),
      api_keys: [K.azure1, K.azure2],
      timeouts,
    },
    {
      id: "claude",
      type: "anthropic",
      base_url: anthropic.url,
      api_keys_env: ["POOL_ANT_1", "POOL_ANT_2"],
      timeouts,
    },
    { id: "gem", type: "gemini", base_url: gemini.url, api_keys: [K.gem1, K.gem2], timeouts },
  ];
  const models: ConfigInput["models"] = [
    ...["turn", "limit", "revoked", "all", "single"].map((id) => ({
      id,
      provider: id,
      upstream_model: "mock-model",
    })),
    { id: "az", provider: "az", upstream_model: "gpt-4o" },
    { id: "claude", provider: "claude", upstream_model: "claude-sonnet-4-5", max_output_tokens: 64 },
    { id: "gem", provider: "gem", upstream_model: "gemini-2.5-flash" },
  ];
  gw = await startTestGateway({
    env: ENV,
    config: {
      providers,
      models,
      plans: [{ id: "default", quota_tokens: 1_000_000_000, models: models.map((m) => m.id) }],
    },
  });
  const accountId = await gw.account(`pools-${randomUUID()}`);
  const key = await gw.key(accountId);
  keyId = key.id;
  client = new OpenAI({ apiKey: key.secret, baseURL: gw.baseURL, maxRetries: 0 });
});

after(async () => {
  await gw?.close();
  await Promise.all([openai?.close(), azure?.close(), anthropic?.close(), gemini?.close()]);
});

/** The key each request to a mock carried, in order. */
function sentKeys(mock: MockUpstream): string[] {
  return mock.requests.map((r) => {
    const h = r.headers;
    const raw = h.authorization ?? h["api-key"] ?? h["x-api-key"] ?? h["x-goog-api-key"];
    return String(raw).replace(/^Bearer /, "");
  });
}

const nameOf = (key: string) => Object.entries(K).find(([, k]) => k === key)?.[0] ?? "?";

function states(model: string): KeyState[] {
  return gw.gateway.deps.registry.model(model)!.provider.keyStates!();
}

async function ask(model: string, stream = false) {
  const messages = [{ role: "user" as const, content: "hello mock:tokens=2" }];
  if (stream) {
    const { data, response } = await client.chat.completions
      .create({ model, messages, stream: true })
      .withResponse();
    let text = "";
    for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? "";
    answers.push(text);
    return { text, requestId: response.headers.get("x-request-id")! };
  }
  const { data, response } = await client.chat.completions.create({ model, messages }).withResponse();
  answers.push(JSON.stringify(data));
  return { text: data.choices[0]!.message.content ?? "", requestId: response.headers.get("x-request-id")! };
}

async function apiError(model: string): Promise<APIError> {
  try {
    await client.chat.completions.create({ model, messages: [{ role: "user", content: "hello" }] });
  } catch (err) {
    assert.ok(err instanceof APIError, `expected an APIError, got ${String(err)}`);
    answers.push(
      `${err.status} ${err.message} ${JSON.stringify(err.error)} ${JSON.stringify([...(err.headers ?? [])])}`,
    );
    return err;
  }
  assert.fail("the call succeeded");
}

async function attempts(requestId: string): Promise<string[]> {
  await gw.gateway.deps.records.flush();
  const record = await gw.record(requestId);
  const list = record.attempts === null ? [] : (JSON.parse(record.attempts) as AttemptRecord[]);
  return list.map((a) => `${a.provider} ${a.outcome} ${a.status ?? "-"}`);
}

const cooldown = (deployment: string) => gw.gateway.routing.cooldowns.get(deployment);

describe("key pools", () => {
  test("the keys are used in turn, whole answers and streams alike: api_key_env, api_keys_env, api_keys", async () => {
    openai.reset();
    for (let i = 0; i < 6; i++) assert.equal((await ask("turn", i % 2 === 1)).text, "Hello world");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["turn1", "turn2", "turn3", "turn1", "turn2", "turn3"]);
    assert.deepEqual(
      states("turn").map((s) => [s.index, s.hint, s.state, s.calls, s.failures]),
      [
        [0, "…8pL4", "ready", 2, 0],
        [1, "…3kD6", "ready", 2, 0],
        [2, "…1zA5", "ready", 2, 0],
      ],
      "the variable that is not set adds no key",
    );
  });

  test("a 429 on one key: the call goes on at once with the next key and succeeds; the deployment is not cooled", async () => {
    limited.add(K.limit1);
    openai.reset();
    const first = await ask("limit");
    assert.equal(first.text, "Hello world");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["limit1", "limit2"]);
    assert.deepEqual(await attempts(first.requestId), ["limit ok -"], "routing saw one attempt, a success");
    assert.equal(cooldown("limit/mock-model"), undefined);
    assert.equal(gw.gateway.routing.cooldowns.failures("limit/mock-model"), 0);

    const [one, two] = states("limit");
    assert.equal(one!.state, "cooling");
    assert.equal(one!.last_error, "429 rate limited");
    assert.equal(one!.failures, 1);
    const left = one!.cooling_until! - Date.now();
    assert.ok(left > 25_000 && left <= 30_000, `no retry-after: the default 30 s (${left} ms left)`);
    assert.deepEqual([two!.state, two!.failures, two!.last_error], ["ready", 0, null]);

    // while it cools, the rate-limited key is not sent at all, streams included
    openai.reset();
    await ask("limit", true);
    await ask("limit");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["limit2", "limit2"]);
  });

  test("a key the upstream refuses (401) is cooled for minutes and skipped; the call succeeds on the next", async () => {
    openai.reset();
    const first = await ask("revoked", true);
    assert.equal(first.text, "Hello world");
    assert.deepEqual(await attempts(first.requestId), ["revoked ok -"]);
    assert.equal(cooldown("revoked/mock-model"), undefined);
    for (let i = 0; i < 3; i++) await ask("revoked");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["revoked", "good", "good", "good", "good"]);
    const [bad, good] = states("revoked");
    assert.equal(bad!.state, "cooling");
    assert.equal(bad!.last_error, "401 authentication failed");
    assert.ok(bad!.cooling_until! - Date.now() > 4 * 60_000, "a refused key cools for 5 minutes");
    assert.deepEqual([good!.state, good!.calls], ["ready", 4]);
  });

  test("Anthropic's 401, Gemini's 400 API_KEY_INVALID and Azure's 429: each moves the call to the next key", async () => {
    const claude = await ask("claude");
    assert.equal(claude.text, "Hello world");
    assert.deepEqual(sentKeys(anthropic).map(nameOf), ["ant1", "ant2"]);
    assert.deepEqual(await attempts(claude.requestId), ["claude ok -"]);
    assert.equal(states("claude")[0]!.last_error, "401 authentication failed");

    const gem = await ask("gem", true);
    assert.equal(gem.text, "Hello world");
    assert.deepEqual(sentKeys(gemini).map(nameOf), ["gem1", "gem2"]);
    assert.deepEqual(await attempts(gem.requestId), ["gem ok -"]);
    assert.equal(states("gem")[0]!.last_error, "400 key invalid");

    limited.add(K.azure1);
    const az = await ask("az");
    assert.equal(az.text, "Hello world");
    assert.deepEqual(sentKeys(azure).map(nameOf), ["azure1", "azure2"]);
    assert.deepEqual(await attempts(az.requestId), ["az ok -"]);
    const [a1] = states("az");
    assert.equal(a1!.last_error, "429 rate limited");
    const left = a1!.cooling_until! - Date.now();
    assert.ok(left > 3_000 && left <= 6_000, `Azure's retry-after (6 s) is honoured (${left} ms left)`);
    assert.equal(cooldown("az/gpt-4o"), undefined);

    // Anthropic's 429 on a pool's only fresh key: with no fresh key left, the 429 is the call's
    limited.add(K.ant2);
    const err = await apiError("claude");
    assert.equal(err.status, 429);
    limited.delete(K.ant2);
  });

  test("every key rate-limited: the client gets what one rate-limited key always gave", async () => {
    for (const key of [K.all1, K.all2, K.all3, K.single]) limited.add(key);
    openai.reset();
    const pooled = await apiError("all");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["all1", "all2", "all3"], "each key once, then the 429");
    openai.reset();
    const alone = await apiError("single");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["single"]);

    for (const err of [pooled, alone]) {
      assert.equal(err.status, 429);
      assert.equal(err.code, "upstream_rate_limited");
    }
    assert.equal(pooled.message, alone.message);
    assert.equal(pooled.headers?.get("retry-after"), alone.headers?.get("retry-after"));
    assert.equal(cooldown("all/mock-model")?.reason, "rate_limited", "the pool exhausted: routing cools it");
    assert.equal(cooldown("single/mock-model")?.reason, "rate_limited");
    assert.deepEqual(
      states("all").map((s) => [s.state, s.failures, s.last_error]),
      Array(3).fill(["cooling", 1, "429 rate limited"]),
    );

    // Every key cooling: the call is still sent, with the key free first; the upstream decides.
    openai.reset();
    await apiError("all");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["all1"]);
    for (const key of [K.all1, K.all2, K.all3]) limited.delete(key);
    openai.reset();
    const back = await ask("all");
    assert.equal(back.text, "Hello world");
    assert.deepEqual(sentKeys(openai).map(nameOf), ["all2"], "the key whose cooldown ends first");
    assert.equal(states("all")[1]!.failures, 0, "a success forgets the key's failures");
  });

  test("no key, nor more of one than its hint, in any answer, record, log line or key state", async () => {
    await gw.gateway.deps.records.flush();
    const records = await gw.gateway.deps.store.db
      .selectFrom("call_records")
      .selectAll()
      .where("key_id", "=", keyId)
      .execute();
    assert.ok(records.length > 15);
    const shown = [
      ["answers", answers.join("\n")],
      ["records", JSON.stringify(records)],
      ["logs", gw.logs.join("\n")],
      ...["turn", "limit", "revoked", "all", "single", "az", "claude", "gem"].map((m) => [
        `${m}'s key states`,
        JSON.stringify(states(m)),
      ]),
    ];
    for (const [where, text] of shown)
      for (const [name, key] of Object.entries(K))
        assert.equal(text!.includes(key.slice(-5)), false, `${where}: more of ${name} than its hint`);
    for (const m of ["turn", "az", "claude", "gem"])
      for (const s of states(m)) assert.match(s.hint, /^….{0,4}$/);
  });
});
