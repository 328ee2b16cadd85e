// Several gateway instances as operators run them: child processes of `node src/main.ts serve`
// on one PostgreSQL store (a database of the test's own), with or without Redis (a key prefix
// of the test's own), configured by a file and the environment. The test reads the books from
// the store (and Redis) itself, and may kill, stop and start instances.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createAccount } from "../../src/accounts/accounts.ts";
import { createKey } from "../../src/accounts/keys.ts";
import { configSchema } from "../../src/config/cross-check.ts";
import type { Config, ConfigInput } from "../../src/config/schema.ts";
import { ledgerSetup } from "../../src/ledger/setup.ts";
import type { MoneyCounter } from "../../src/ledger/types.ts";
import { createLogger } from "../../src/observability/logger.ts";
import { migrate, openStore, type Store } from "../../src/store/db.ts";
import { testConfig } from "./gateway.ts";
import type { Arrivals, Books, LoadTarget } from "./mixed-load.ts";
import type { MockUpstream } from "./mock-openai-upstream.ts";
import { createTestDatabase, type TestDatabase } from "./postgres.ts";
import { dropRedisKeys, journaledRecords, redisPrefix, TEST_REDIS_URL } from "./redis-instance.ts";

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url));
const PRELOAD = fileURLToPath(new URL("./arrivals-preload.ts", import.meta.url));

export interface GatewayProcess {
  /** e.g. http://127.0.0.1:41234 */
  origin: string;
  /** origin + /v1 */
  baseURL: string;
  child: ChildProcess;
  /** its log lines (JSON) */
  logs: string[];
  /** resolves with the exit code (null when killed by a signal) */
  exited: Promise<number | null>;
  /** SIGTERM: the graceful shutdown */
  stop(): Promise<void>;
  /** SIGKILL: a crash, nothing flushed or released */
  kill(): Promise<void>;
}

export interface ClusterOptions {
  instances: number;
  upstream: MockUpstream;
  /** share the ledger and rate limits through Redis: true for the test server, or another one's URL */
  redis?: boolean | string;
  /** replaces fields of the generated config */
  config?: Partial<ConfigInput>;
  /** more environment for every instance (GATEWAY_SECRET_KEY, say) */
  env?: Record<string, string>;
}

export interface Cluster {
  instances: GatewayProcess[];
  config: Config;
  /** the configuration file the instances read (GATEWAY_CONFIG), for the CLI too */
  configFile: string;
  /** the test's own connection to the shared store */
  store: Store;
  redis: { url: string; prefix: string } | undefined;
  /** the load target: requests spread over the live instances */
  target: LoadTarget;
  /** the holds on a key in the store (journaled with Redis), of every instance: how many, how many tokens */
  holds(keyId: string): Promise<{ count: number; tokens: number }>;
  /** what the ledger's shared state (the store, or Redis) holds of an account's or key's money */
  money(kind: "account" | "key", id: string): Promise<MoneyCounter | undefined>;
  /** starts one more instance */
  start(): Promise<GatewayProcess>;
  close(): Promise<void>;
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const database: TestDatabase = await createTestDatabase();
  const redis =
    options.redis === undefined || options.redis === false
      ? undefined
      : { url: options.redis === true ? TEST_REDIS_URL : options.redis, prefix: redisPrefix() };
  const input: ConfigInput = {
    ...testConfig(options.upstream, options.config),
    store: {
      ...options.config?.store,
      database_url: database.url,
      ...(redis ? { redis_url: redis.url, redis_prefix: redis.prefix } : {}),
    },
  };
  const config = configSchema.parse(input);
  const dir = mkdtempSync(join(tmpdir(), "gw-cluster-"));
  const file = join(dir, "gateway.yaml");
  writeFileSync(file, JSON.stringify(input)); // JSON is YAML

  const store = openStore(config.store);
  await migrate(store);
  // An account exists, so no instance creates the first-start account (they would race).
  await createAccount(store.db, { name: "cluster-operator", plan_id: config.default_plan });
  const inspector = ledgerSetup(config, store, createLogger("silent"), "test-inspector");

  const arrivalWatchers = new Set<Arrivals>();
  const instances: GatewayProcess[] = [];

  async function start(): Promise<GatewayProcess> {
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...options.env,
      GATEWAY_CONFIG: file,
      PORT: "0",
    };
    for (const name of ["DATABASE_URL", "REDIS_URL", "GATEWAY_DATA_DIR", "NODE_TEST_CONTEXT", "NODE_OPTIONS"])
      delete env[name];
    const child = spawn(process.execPath, ["--import", PRELOAD, MAIN, "serve", "--json"], {
      env,
      cwd: dir,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const logs: string[] = [];
    const exited = once(child, "exit").then(([code]) => code as number | null);
    child.on("message", (m: { arrived?: number }) => {
      if (m.arrived !== undefined) for (const a of arrivalWatchers) a.mark(m.arrived);
    });
    child.stderr!.setEncoding("utf8").on("data", (d: string) => logs.push(d));
    const origin = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.on("line", (line) => {
        logs.push(line);
        try {
          const parsed = JSON.parse(line) as { url?: string; console_url?: string };
          if (parsed.url && parsed.console_url) resolve(parsed.url.replace(/\/v1$/, ""));
        } catch {}
      });
      void exited.then((code) =>
        reject(new Error(`gateway exited (${code}) before listening:\n${logs.join("\n")}`)),
      );
    });
    const instance: GatewayProcess = {
      origin,
      baseURL: `${origin}/v1`,
      child,
      logs,
      exited,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        await exited;
      },
      async kill() {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await exited;
      },
    };
    instances.push(instance);
    return instance;
  }

  try {
    await Promise.all(Array.from({ length: options.instances }, start));
  } catch (err) {
    for (const i of instances) await i.kill();
    throw err;
  }

  const books: Books = {
    db: store.db,
    counter: (kind, id) => inspector.ledger.inspect!(kind, id),
    openHolds: () => inspector.ledger.openHolds!(),
    planQuota: (id) => config.plans.find((p) => p.id === id)?.quota_tokens,
    // Records are committed behind the answers (store.records_journal, the production default):
    // every instance's journal in Redis is empty once they are, a dead instance's once a sweep
    // committed what it left. Without Redis each answer waits for its record's commit.
    flush: async () => {
      const client = inspector.redis?.client;
      if (!client || !redis) return;
      const deadline = Date.now() + 30_000;
      for (;;) {
        const left = (await journaledRecords(client, redis.prefix)).length;
        if (left === 0) return;
        if (Date.now() > deadline) throw new Error(`${left} records still journaled in Redis after 30 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
  const target: LoadTarget = {
    get baseURLs() {
      return instances
        .filter((i) => i.child.exitCode === null && i.child.signalCode === null)
        .map((i) => i.baseURL);
    },
    account: async (name, o = {}) =>
      (await createAccount(store.db, { name, plan_id: o.plan ?? "default", quota_tokens: o.quota ?? null }))
        .id,
    key: async (accountId, o = {}) => {
      const { key, secret } = await createKey(store.db, {
        account_id: accountId,
        name: o.name ?? null,
        limit_tokens: o.limit ?? null,
      });
      return { id: key.id, secret };
    },
    books,
    watch(arrivals) {
      arrivalWatchers.add(arrivals);
      return () => arrivalWatchers.delete(arrivals);
    },
  };

  return {
    instances,
    config,
    configFile: file,
    store,
    redis,
    target,
    start,
    async holds(keyId) {
      const row = await store.db
        .selectFrom("ledger_reservations")
        .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.sum<number>("tokens").as("t")])
        .where("key_id", "=", keyId)
        .executeTakeFirstOrThrow();
      return { count: Number(row.n), tokens: Number(row.t ?? 0) };
    },
    money: (kind, id) => inspector.ledger.inspectMoney!(kind, id),
    async close() {
      await Promise.all(instances.map((i) => i.stop()));
      await inspector.stop().catch(() => undefined);
      await store.close();
      await database.drop();
      if (redis) await dropRedisKeys(redis.url, redis.prefix);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
