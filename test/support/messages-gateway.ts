// A gateway for the Messages API suites: one model on each kind of upstream (the
// OpenAI-compatible mock, translated; the Anthropic mock, native; the Gemini mock, translated),
// a twin of each for the calls that make it fail (so their cooldowns touch no other test), and
// @anthropic-ai/sdk clients.
import Anthropic, { type ClientOptions } from "@anthropic-ai/sdk";
import OpenAI from "openai";
import type { ConfigInput } from "../../src/config/schema.ts";
import { startTestGateway, type TestGateway } from "./gateway.ts";
import { freePort } from "./listen.ts";
import { startMockAnthropic } from "./mock-anthropic-upstream.ts";
import { startMockGemini } from "./mock-gemini-upstream.ts";
import { type MockUpstream, startMockUpstream } from "./mock-openai-upstream.ts";

export const UPSTREAM_KEYS = {
  MOCK_UPSTREAM_KEY: "sk-upstream-secret-123",
  ANTHROPIC_KEY: "sk-ant-test-0123456789",
  GEMINI_KEY: "AIzaTest0123456789",
};

export type UpstreamKind = "openai" | "anthropic" | "gemini";

/** The public model on each kind of upstream, and how a Messages call reaches it. */
export const UPSTREAMS: readonly { kind: UpstreamKind; model: string; label: string }[] = [
  { kind: "openai", model: "gpt-test", label: "OpenAI-compatible upstream (translated)" },
  { kind: "anthropic", model: "claude", label: "Anthropic upstream (native)" },
  { kind: "gemini", model: "gemini", label: "Gemini upstream (translated)" },
];

/** The twin of a model, for calls that make its upstream fail. */
export const failing = (model: string) => `${model}-failing`;

/**
 * Models of two deployments, the first on a port nothing listens on: every call fails over,
 * from an Anthropic deployment to an OpenAI-compatible one, and the other way round.
 */
export const FAILOVER = { toTranslated: "claude-then-gpt", toNative: "gpt-then-claude" } as const;

export const OUTPUT_BOUND = 512;

export interface MessagesGateway {
  gw: TestGateway;
  mocks: Record<UpstreamKind, MockUpstream>;
  /** the mock behind a public model */
  mockOf(model: string): MockUpstream;
  /** an Anthropic client with this key, no retries */
  anthropic(key: string, options?: ClientOptions): Anthropic;
  /** an OpenAI client with this key, no retries */
  openai(key: string): OpenAI;
  close(): Promise<void>;
}

export async function startMessagesGateway(
  options: {
    config?: Partial<ConfigInput>;
    store?: "sqlite" | "postgres";
    anthropic?: Record<string, unknown>;
  } = {},
): Promise<MessagesGateway> {
  const mocks: Record<UpstreamKind, MockUpstream> = {
    openai: await startMockUpstream({ apiKey: UPSTREAM_KEYS.MOCK_UPSTREAM_KEY }),
    anthropic: await startMockAnthropic({ apiKey: UPSTREAM_KEYS.ANTHROPIC_KEY }),
    gemini: await startMockGemini({ apiKey: UPSTREAM_KEYS.GEMINI_KEY }),
  };
  const timeouts = { connect_ms: 2_000, first_byte_ms: 5_000, idle_ms: 5_000, total_ms: 15_000 };
  const providers: NonNullable<ConfigInput["providers"]> = [
    { id: "demo", type: "demo" },
    {
      id: "oai",
      type: "openai-compatible",
      base_url: mocks.openai.url,
      api_key_env: "MOCK_UPSTREAM_KEY",
      timeouts,
    },
    {
      id: "anth",
      type: "anthropic",
      base_url: mocks.anthropic.url,
      api_key_env: "ANTHROPIC_KEY",
      timeouts,
      ...options.anthropic,
    },
    { id: "gem", type: "gemini", base_url: mocks.gemini.url, api_key_env: "GEMINI_KEY", timeouts },
  ];
  const down = `http://127.0.0.1:${await freePort()}`;
  providers.push(
    { id: "anth-down", type: "anthropic", base_url: down, api_key_env: "ANTHROPIC_KEY", timeouts },
    {
      id: "oai-down",
      type: "openai-compatible",
      base_url: `${down}/v1`,
      api_key_env: "MOCK_UPSTREAM_KEY",
      timeouts,
    },
  );
  const upstreamModel: Record<UpstreamKind, string> = {
    openai: "mock-model",
    anthropic: "claude-sonnet-4-5",
    gemini: "gemini-2.5-flash",
  };
  const providerOf: Record<UpstreamKind, string> = { openai: "oai", anthropic: "anth", gemini: "gem" };
  const models: NonNullable<ConfigInput["models"]> = UPSTREAMS.flatMap(({ kind, model }) => [
    {
      id: model,
      provider: providerOf[kind],
      upstream_model: upstreamModel[kind],
      max_output_tokens: OUTPUT_BOUND,
      // the mocks model reasoning servers: a client's thinking is translated for them
      capabilities: { reasoning: true },
    },
    // another upstream model name: a deployment of its own, with its own health
    { id: failing(model), provider: providerOf[kind], upstream_model: `${upstreamModel[kind]}-b` },
  ]);
  models.push(
    {
      id: FAILOVER.toTranslated,
      routing: "ordered",
      deployments: [
        { provider: "anth-down", upstream_model: "claude-down" },
        { provider: "oai", upstream_model: "mock-model-c" },
      ],
    },
    {
      id: FAILOVER.toNative,
      routing: "ordered",
      deployments: [
        { provider: "oai-down", upstream_model: "mock-down" },
        { provider: "anth", upstream_model: "claude-sonnet-c" },
      ],
    },
  );
  const ids = models.map((m) => m.id);
  let gw: TestGateway;
  try {
    gw = await startTestGateway({
      store: options.store,
      env: UPSTREAM_KEYS,
      config: {
        providers,
        models: [...models, { id: "demo", provider: "demo" }],
        plans: [
          { id: "default", quota_tokens: 1_000_000_000, models: [...ids, "demo"] },
          { id: "demo-only", quota_tokens: 1_000_000, models: ["demo"] },
        ],
        ...options.config,
      },
    });
  } catch (err) {
    await Promise.all(Object.values(mocks).map((m) => m.close()));
    throw err;
  }
  // (the failover models have no one kind)
  const kindOf = new Map(
    models.flatMap((m) => {
      const kind = UPSTREAMS.find((u) => providerOf[u.kind] === m.provider)?.kind;
      return kind ? [[m.id, kind] as const] : [];
    }),
  );
  return {
    gw,
    mocks,
    mockOf: (model) => mocks[kindOf.get(model)!],
    anthropic: (key, extra = {}) =>
      new Anthropic({ apiKey: key, baseURL: gw.origin, maxRetries: 0, timeout: 20_000, ...extra }),
    openai: (key) => new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0, timeout: 20_000 }),
    async close() {
      await gw.close();
      await Promise.all(Object.values(mocks).map((m) => m.close()));
    },
  };
}
