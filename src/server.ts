// Starts a gateway: opens and migrates the store, builds the providers, the ledger, the
// caches and the record writer, then listens. close() is the graceful shutdown SIGTERM runs.
import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { dirname, join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { countAccounts, createAccount } from "./accounts/accounts.ts";
import { createKey } from "./accounts/keys.ts";
import { RevisionWatcher } from "./accounts/revision-watcher.ts";
import { createUser, normaliseEmail } from "./accounts/users.ts";
import { buildApp } from "./app.ts";
import { KeyCache } from "./auth/key-cache.ts";
import { ConfigError } from "./config/load.ts";
import type { Config } from "./config/schema.ts";
import type { GatewayDeps } from "./http/deps.ts";
import { LiveUsagePublisher } from "./ledger/live-usage.ts";
import { ledgerSetup } from "./ledger/setup.ts";
import { Registry } from "./models/registry.ts";
import { createLogger } from "./observability/logger.ts";
import { Metrics, VERSION } from "./observability/metrics.ts";
import { startTracing, TracingConfigError } from "./observability/tracing.ts";
import { RecordJournal } from "./records/journal.ts";
import { RecordWriter } from "./records/writer.ts";
import { CallFinisher } from "./relay/finish.ts";
import { Relay } from "./relay/relay.ts";
import { RetentionJob } from "./retention/retention.ts";
import { type Routing, startRouting } from "./routing/setup.ts";
import { SafetyPolicy } from "./safety/policy.ts";
import { buildReviewers } from "./safety/reviewers/index.ts";
import { WithheldLimiter } from "./safety/withheld-limiter.ts";
import { migrate, openStore } from "./store/db.ts";
import { registerModels } from "./store/models-seen.ts";

/** How often a running gateway looks for changes made by the CLI or other instances. */
const REVISION_POLL_MS = 250;
/** How often it publishes its open reservations, rate windows and deployments' health for the CLI. */
const LIVE_USAGE_MS = 1_000;

export interface Gateway {
  app: FastifyInstance;
  deps: GatewayDeps;
  /** e.g. http://127.0.0.1:8080 */
  url: string;
  /** the key created on first start with an empty store; shown once */
  firstKey: { account: string; secret: string } | undefined;
  /** the console admin created beside it, with a random password; shown once */
  firstAdmin: { email: string; password: string } | undefined;
  /** deployments' cooldowns and traffic, as this instance sees them */
  routing: Routing;
  close(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string | undefined>;
  logger?: Logger;
  /** skip creating the default account on an empty store (tests make their own) */
  bootstrap?: boolean;
  /** the clock budget periods and charges are read with (tests move it across a month) */
  now?: () => number;
}

/** Open connections and which of them have a request in flight. */
function trackConnections(server: Server) {
  const open = new Set<Socket>();
  const busy = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => {
      open.delete(socket);
      busy.delete(socket);
    });
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    busy.add(req.socket);
    res.once("close", () => busy.delete(req.socket));
  });
  return {
    closeIdle: () => {
      for (const socket of open) if (!busy.has(socket)) socket.destroy();
    },
  };
}

/** What a stopped process journaled and did not commit goes into the store before the first call. */
async function replayJournal(journal: RecordJournal, records: RecordWriter, logger: Logger): Promise<void> {
  const left = journal.leftovers();
  if (left.busy.length)
    logger.warn(
      { segments: left.busy.length },
      "call-record journal segments of another running process are left to it: one gateway per SQLite store",
    );
  if (!left.files.length) return;
  const added = await records.replay(left.records);
  journal.remove(left.files);
  if (left.unreadable) logger.warn({ lines: left.unreadable }, "journal lines cut by a crash were skipped");
  logger.info(
    { journaled: left.records.length, added },
    "replayed the call-record journal of a process that stopped without committing it",
  );
}

/**
 * The e-mail of the admin the first start creates: GATEWAY_FIRST_ADMIN_EMAIL, else
 * console.first_admin_email (admin@localhost by default, so `npm start` works with nothing set).
 */
function firstAdminEmail(config: Config, env: Record<string, string | undefined>): string {
  const fromEnv = env.GATEWAY_FIRST_ADMIN_EMAIL?.trim();
  try {
    return normaliseEmail(fromEnv || config.console.first_admin_email);
  } catch (err) {
    const source = fromEnv ? "environment: GATEWAY_FIRST_ADMIN_EMAIL" : "console.first_admin_email";
    throw new ConfigError(`${source}: ${(err as Error).message}`);
  }
}

/** A metrics.token_env that names no value would leave /metrics open: refuse to start. */
function readMetricsToken(config: Config, env: Record<string, string | undefined>): string | undefined {
  const name = config.metrics.token_env;
  if (name === undefined) return undefined;
  const token = env[name]?.trim();
  if (!token) throw new ConfigError(`metrics.token_env: the environment variable ${name} is not set`);
  return token;
}

export async function startGateway(config: Config, options: StartOptions = {}): Promise<Gateway> {
  const env = options.env ?? process.env;
  const logger = options.logger ?? createLogger(config.log_level);
  const metricsToken = readMetricsToken(config, env);
  const adminEmail = firstAdminEmail(config, env);
  const instanceId = randomUUID();
  const tracing = await startTracing(config.tracing, {
    env,
    logger,
    providerTypes: new Map(config.providers.map((p) => [p.id, p.type])),
    instanceId,
    version: VERSION,
  }).catch((err) => {
    throw err instanceof TracingConfigError ? new ConfigError(`environment: ${err.message}`) : err;
  });
  const store = openStore(config.store, (err) =>
    logger.warn({ err }, "the database closed an idle connection; the pool replaces it"),
  );
  await migrate(store);
  const created = await registerModels(
    store.db,
    config.models.map((m) => m.id),
  );

  let firstKey: Gateway["firstKey"];
  let firstAdmin: Gateway["firstAdmin"];
  if (options.bootstrap !== false && (await countAccounts(store.db)) === 0) {
    const account = await createAccount(store.db, { name: "default", plan_id: config.default_plan });
    const { secret } = await createKey(store.db, { account_id: account.id, name: "default" });
    firstKey = { account: account.name, secret };
    // the console's first admin, so someone can log in; more users come from the console or the CLI
    const password = randomBytes(18).toString("base64url");
    const admin = await createUser(store.db, {
      account_id: account.id,
      email: adminEmail,
      role: "admin",
      password,
    });
    firstAdmin = { email: admin.email, password };
  }

  const metrics = new Metrics({ accountLabel: config.metrics.account_label, commit: env.GATEWAY_COMMIT });
  const registry = new Registry(config, created, env);
  const now = options.now ?? Date.now;
  const shared = ledgerSetup(config, store, logger, instanceId, now);
  const { ledger, rates } = shared;
  const keys = new KeyCache(store.db);
  // The journal only where records are local: a shared ledger's holds close in the store.
  const journal =
    store.dialect === "sqlite" && config.store.records_journal && !shared.holds
      ? new RecordJournal(join(dirname(store.location), "records-journal"))
      : undefined;
  const records = new RecordWriter(store.db, {
    onError: (err, attempt) => {
      metrics.recordWriteErrors.inc();
      logger.error({ err, attempt }, "could not commit call records");
    },
    holds: shared.holds,
    now,
    journal,
    commitIntervalMs: config.store.records_commit_ms,
  });
  if (journal) await replayJournal(journal, records, logger);
  const safety = new SafetyPolicy(
    config.safety,
    buildReviewers(config.safety.reviewers, { registry, env }),
    metrics,
  );
  const finisher = new CallFinisher({ records, metrics, logger, registry });
  const routing = await startRouting(config, { db: store.db, metrics, logger, instanceId });
  const relay = new Relay({
    registry,
    router: routing.router,
    ledger,
    rates,
    finisher,
    metrics,
    safety,
    withheld: new WithheldLimiter(config.safety.withheld_limit),
    logger,
    keepAliveMs: config.server.sse_keepalive_ms,
    now,
  });
  let closing = false;
  const deps: GatewayDeps = {
    config,
    store,
    registry,
    ledger,
    rates,
    keys,
    records,
    relay,
    finisher,
    metrics,
    tracing,
    logger,
    metricsToken,
    isClosing: () => closing,
  };
  const watcher = new RevisionWatcher(store.db, {
    intervalMs: REVISION_POLL_MS,
    onChange: () => keys.clear(),
    onError: (err) => logger.warn({ err }, "could not read the store's revision"),
  });
  await watcher.start();
  await shared.start();
  const live = new LiveUsagePublisher(store.db, ledger, rates, {
    instanceId,
    onError: (err) => logger.warn({ err }, "could not publish live usage"),
  });
  live.start(LIVE_USAGE_MS);
  routing.publisher.start(LIVE_USAGE_MS);
  const retention = new RetentionJob(store.db, config.retention, logger);
  retention.start();

  const app = buildApp(deps);
  const connections = trackConnections(app.server);
  await app.listen({ host: config.server.host, port: config.server.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.server.port;
  const host = config.server.host.includes(":") ? `[${config.server.host}]` : config.server.host;
  logger.info({ url: `http://${host}:${port}/v1`, store: store.location }, "gateway listening");

  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      closing = true;
      // Stop accepting, let in-flight requests finish (bounded by the grace period).
      const grace = setTimeout(() => {
        logger.warn("shutdown grace period over: closing the remaining connections");
        app.server.closeAllConnections();
      }, config.server.shutdown_grace_ms);
      grace.unref();
      // Node closes idle keep-alive connections once, when close() is called, and does not
      // count a connection that never carried a request as idle: either would hold the
      // shutdown until its keep-alive expires. Close every connection without a request in
      // flight, again as in-flight requests finish.
      const sweep = setInterval(connections.closeIdle, 50);
      connections.closeIdle();
      await app.close();
      clearTimeout(grace);
      clearInterval(sweep);
      // Calls cut by the grace period finish (and queue their records) just after their
      // sockets close, which is what app.close() waits for: wait for them, then flush.
      await relay.drain();
      await records.flush();
      await tracing.shutdown().catch((err) => logger.warn({ err }, "could not export the last spans"));
      await shared.stop().catch((err) => logger.warn({ err }, "could not give up the ledger lease"));
      await retention.stop();
      await live.stop().catch((err) => logger.warn({ err }, "could not clear live usage"));
      await routing.close();
      await watcher.stop();
      await safety.close();
      await registry.close();
      await store.close();
      logger.info("gateway stopped");
    })();
    return closed;
  };

  return { app, deps, url: `http://${host}:${port}`, firstKey, firstAdmin, routing, close };
}
