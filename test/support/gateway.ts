// Starts a real gateway on a random loopback port for a test: its own SQLite folder (or its
// own PostgreSQL database), a config pointing at the mock upstream, and captured logs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createAccount } from "../../src/accounts/accounts.ts";
import { createKey } from "../../src/accounts/keys.ts";
import { createUser } from "../../src/accounts/users.ts";
import { configSchema } from "../../src/config/cross-check.ts";
import type { ConfigInput } from "../../src/config/schema.ts";
import type { Counter } from "../../src/ledger/types.ts";
import { createLogger } from "../../src/observability/logger.ts";
import type { CallRecord } from "../../src/records/call-record.ts";
import { type Gateway, startGateway } from "../../src/server.ts";
import type { MockUpstream } from "./mock-openai-upstream.ts";
import { createTestDatabase, type TestDatabase } from "./postgres.ts";
import { dropRedisKeys, redisPrefix, TEST_REDIS_URL } from "./redis-instance.ts";

/** postgres+redis: the ledger and rate limits in Redis (the test server, a prefix of its own) */
export type StoreKind = "sqlite" | "postgres" | "postgres+redis";

export interface TestGatewayOptions {
  upstream?: MockUpstream;
  store?: StoreKind;
  /** replaces fields of the generated config */
  config?: Partial<ConfigInput>;
  env?: Record<string, string | undefined>;
  /** postgres+redis: another Redis than the test server (one the test stops and restarts) */
  redisUrl?: string;
  /** postgres: the URL the gateway is given, from its database's (a proxy the test cuts in between) */
  databaseUrl?: (url: string) => string;
  /** the gateway's clock for budget periods (a test moves it across a month) */
  now?: () => number;
}

export interface TestGateway {
  gateway: Gateway;
  /** base URL ending in /v1, as clients use it */
  baseURL: string;
  /** the origin, for /healthz and friends */
  origin: string;
  /** every log line the gateway wrote */
  logs: string[];
  account(name: string, options?: { plan?: string; quota?: number | null }): Promise<string>;
  key(
    accountId: string,
    options?: { name?: string; limit?: number | null },
  ): Promise<{ id: string; secret: string }>;
  /** the call record of a request id (fails when there is none) */
  record(requestId: string): Promise<CallRecord>;
  /** the tokens and the number of a key's or an account's call records */
  recorded(column: "key_id" | "account_id", id: string): Promise<{ tokens: number; calls: number }>;
  /**
   * The ledger's used and reserved of a key or account: what a shared ledger's shared state
   * (the store, Redis) holds, else the in-process ledger's; undefined when it never met it.
   */
  ledger(kind: "account" | "key", id: string): Promise<Counter | undefined>;
  /** a console user of the account, logged in through POST /api/console/login */
  consoleUser(
    accountId: string,
    options?: { role?: "member" | "owner" | "admin"; email?: string; password?: string },
  ): Promise<ConsoleSession>;
  /** logs in to the console; the session's cookie ("gw_session=…") for the Cookie header */
  consoleLogin(email: string, password: string): Promise<string>;
  close(): Promise<void>;
}

export interface ConsoleSession {
  id: string;
  email: string;
  password: string;
  /** "gw_session=…", for the Cookie header */
  cookie: string;
}

let consoleUsers = 0;

/** The model ids the default test config offers. */
export const TEST_MODEL = "gpt-test";
/** what the store's upstream secrets are sealed under in tests (src/catalog/secret-box.ts) */
export const TEST_SECRET_KEY = "test-secret-key-of-at-least-32-characters";

export function testConfig(
  upstream: MockUpstream | undefined,
  overrides: Partial<ConfigInput> = {},
): ConfigInput {
  return {
    server: {
      host: "127.0.0.1",
      port: 0,
      body_limit_bytes: 64 * 1024,
      // tests that stop sending a refused body wait this long for the close
      body_discard_ms: 1_000,
      shutdown_grace_ms: 5_000,
    },
    log_level: "info",
    providers: [
      { id: "demo", type: "demo" },
      ...(upstream
        ? [
            {
              id: "mock",
              type: "openai-compatible" as const,
              base_url: upstream.url,
              api_key_env: "MOCK_UPSTREAM_KEY",
              timeouts: { connect_ms: 2_000, first_byte_ms: 3_000, idle_ms: 3_000, total_ms: 10_000 },
            },
          ]
        : []),
    ],
    models: [
      { id: "demo", provider: "demo", owned_by: "chat-gateway" },
      ...(upstream
        ? [
            {
              id: TEST_MODEL,
              provider: "mock",
              upstream_model: "mock-model",
              owned_by: "acme",
              max_output_tokens: 256,
            },
          ]
        : []),
    ],
    plans: [
      { id: "default", quota_tokens: 1_000_000_000, models: upstream ? [TEST_MODEL, "demo"] : ["demo"] },
      { id: "demo-only", quota_tokens: 1_000_000, models: ["demo"] },
    ],
    ...overrides,
  };
}

/** TEST_MODEL's prices in the money suites, USD per million tokens: $3 in, $15 out. */
export const TEST_PRICING = { input: 3, output: 15 } as const;

/** The test config's models, with TEST_MODEL priced at `pricing`. */
export function pricedModels(upstream: MockUpstream, pricing = TEST_PRICING): ConfigInput["models"] {
  return (testConfig(upstream).models ?? []).map((m) => (m.id === TEST_MODEL ? { ...m, pricing } : m));
}

export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const kind = options.store ?? "sqlite";
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  const input = testConfig(options.upstream, options.config);
  let redis: { url: string; prefix: string } | undefined;
  // Tests read the store right after an answer: each answer waits for its record's commit,
  // unless a suite asks for the journal (the production default) to test it.
  if (kind !== "sqlite") {
    database = await createTestDatabase();
    input.store = {
      records_journal: false,
      ...input.store,
      database_url: options.databaseUrl?.(database.url) ?? database.url,
    };
    if (kind === "postgres+redis") {
      redis = { url: options.redisUrl ?? TEST_REDIS_URL, prefix: redisPrefix() };
      input.store = { ...input.store, redis_url: redis.url, redis_prefix: redis.prefix };
    }
  } else {
    dataDir = mkdtempSync(join(tmpdir(), "gw-test-"));
    input.store = { records_journal: false, ...input.store, data_dir: dataDir };
  }
  // TEST_CATALOG_SOURCE=store runs a suite with the catalog in the store (seeded from this
  // config), so the suites that configure providers, models and plans in the file cover both
  // sources (npm run test:store-catalog)
  if (process.env.TEST_CATALOG_SOURCE === "store" && input.catalog === undefined)
    input.catalog = { source: "store" };
  const config = configSchema.parse(input);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const gateway = await startGateway(config, {
    env: { MOCK_UPSTREAM_KEY: "sk-upstream-secret-123", GATEWAY_SECRET_KEY: TEST_SECRET_KEY, ...options.env },
    logger: createLogger(config.log_level, sink),
    bootstrap: false,
    ...(options.now ? { now: options.now } : {}),
  });
  const db = gateway.deps.store.db;
  async function consoleLogin(email: string, password: string): Promise<string> {
    const res = await fetch(`${gateway.url}/api/console/login`, {
      method: "POST",
      headers: { origin: gateway.url, "content-type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    if (res.status !== 200) throw new Error(`console login failed: ${res.status} ${await res.text()}`);
    const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0]!;
    if (!cookie.startsWith("gw_session=")) throw new Error("console login set no session cookie");
    return cookie;
  }
  return {
    gateway,
    baseURL: `${gateway.url}/v1`,
    origin: gateway.url,
    logs,
    async account(name, opts = {}) {
      const a = await createAccount(db, {
        name,
        plan_id: opts.plan ?? "default",
        quota_tokens: opts.quota ?? null,
      });
      return a.id;
    },
    async key(accountId, opts = {}) {
      const { key, secret } = await createKey(db, {
        account_id: accountId,
        name: opts.name ?? null,
        limit_tokens: opts.limit ?? null,
      });
      return { id: key.id, secret };
    },
    record(requestId) {
      return db
        .selectFrom("call_records")
        .selectAll()
        .where("request_id", "=", requestId)
        .executeTakeFirstOrThrow();
    },
    async recorded(column, id) {
      const row = await db
        .selectFrom("call_records")
        .select((eb) => [
          eb.fn.sum<number>("total_tokens").as("tokens"),
          eb.fn.countAll<number>().as("calls"),
        ])
        .where(column, "=", id)
        .executeTakeFirstOrThrow();
      return { tokens: Number(row.tokens ?? 0), calls: Number(row.calls) };
    },
    async ledger(kind, id) {
      const l = gateway.deps.ledger;
      if (l.inspect) return l.inspect(kind, id);
      return kind === "key" ? l.key(id) : l.account(id);
    },
    consoleLogin,
    async consoleUser(accountId, opts = {}) {
      const email = opts.email ?? `user${++consoleUsers}-${Date.now()}@example.test`;
      const password = opts.password ?? `pw-${Math.random().toString(36).slice(2)}-long`;
      const user = await createUser(db, {
        account_id: accountId,
        email,
        role: opts.role ?? "member",
        password,
      });
      return { id: user.id, email: user.email, password, cookie: await consoleLogin(email, password) };
    },
    async close() {
      await gateway.close();
      if (database) await database.drop();
      if (redis) await dropRedisKeys(redis.url, redis.prefix);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
