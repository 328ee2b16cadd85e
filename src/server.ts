// Starts a gateway: opens and migrates the store, builds the providers, the ledger, the
// caches and the record writer, then listens. close() is the graceful shutdown SIGTERM runs,
// reload() what SIGHUP runs (docs/health.md).
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
import { composeConfig } from "./catalog/compose.ts";
import { readCatalogRevision } from "./catalog/entries.ts";
import { FileCatalog, StoreCatalog } from "./catalog/service.ts";
import { secretBoxOf, seedFromFile, withStoredCatalog } from "./catalog/source.ts";
import { ConfigError } from "./config/load.ts";
import type { Config } from "./config/schema.ts";
import type { GatewayDeps } from "./http/deps.ts";
import { readiness } from "./http/readiness.ts";
import { LiveUsagePublisher } from "./ledger/live-usage.ts";
import { ledgerSetup } from "./ledger/setup.ts";
import { createLogger } from "./observability/logger.ts";
import { Metrics, VERSION } from "./observability/metrics.ts";
import { startTracing, TracingConfigError } from "./observability/tracing.ts";
import { RecordJournal } from "./records/journal.ts";
import { RedisRecordJournal } from "./records/redis-journal.ts";
import { defaultCommitMs, RecordWriter } from "./records/writer.ts";
import { CallFinisher } from "./relay/finish.ts";
import { Relay } from "./relay/relay.ts";
import { buildCallSettings, configReloader, type ReloadResult, swappableSettings } from "./relay/settings.ts";
import { RetentionJob } from "./retention/retention.ts";
import { type Routing, startRouting } from "./routing/setup.ts";
import { migrate, openStore, type Store } from "./store/db.ts";
import {
  failureText,
  isConnectionFailure,
  Reachability,
  warnUnlessUnreachable,
} from "./store/reachability.ts";

/** How often a running gateway looks for changes made by the CLI or other instances. */
const REVISION_POLL_MS = 250;
/** How often it looks for a change to a store-managed catalog (docs/control-plane.md: within two seconds). */
const CATALOG_POLL_MS = 250;
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
  /** reads the configuration again and applies it to new calls (SIGHUP; src/relay/settings.ts) */
  reload(): Promise<ReloadResult>;
  /** drains and stops (SIGTERM, SIGINT; docs/health.md) */
  close(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string | undefined>;
  logger?: Logger;
  /** skip creating the default account on an empty store (tests make their own) */
  bootstrap?: boolean;
  /** the clock budget periods and charges are read with (tests move it across a month) */
  now?: () => number;
  /** reads the configuration again for a reload, as the start read it; without it a reload finds it unchanged */
  loadConfig?: () => Config;
  /** where loadConfig reads from (the file), for the reload's log lines */
  configSource?: string;
  /**
   * runs once everything is built, before the port opens: serve's collection of what start-up
   * left (src/lib/idle-memory.ts), which no call can then wait on
   */
  beforeListen?: () => Promise<void>;
}

/** Open connections, which of them have a request in flight, and which carried one. */
function trackConnections(server: Server) {
  const open = new Set<Socket>();
  const busy = new Set<Socket>();
  const served = new WeakSet<Socket>();
  let onIdle: (() => void) | undefined;
  const done = (socket: Socket) => {
    busy.delete(socket);
    if (!busy.size) onIdle?.();
  };
  server.on("connection", (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => {
      open.delete(socket);
      done(socket);
    });
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    busy.add(req.socket);
    served.add(req.socket);
    res.once("close", () => done(req.socket));
  });
  return {
    /** closes the connections kept alive between requests; a new one may still send its first */
    closeKeptAlive: () => {
      for (const socket of open) if (served.has(socket) && !busy.has(socket)) socket.destroy();
    },
    /** closes every connection without a request in flight */
    closeIdle: () => {
      for (const socket of open) if (!busy.has(socket)) socket.destroy();
    },
    /** resolves once no request is in flight */
    idle: () =>
      new Promise<void>((resolve) => {
        if (!busy.size) return resolve();
        onIdle = () => {
          onIdle = undefined;
          resolve();
        };
      }),
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

/**
 * The first start on an empty store: the default account, its key and the console's first
 * admin. Instances started together on one empty PostgreSQL store race here: the default
 * account's name is unique, so one makes it, and the others find it made and start without a
 * first key.
 */
async function firstStart(
  store: Store,
  planId: string,
  adminEmail: string,
  logger: Logger,
): Promise<Pick<Gateway, "firstKey" | "firstAdmin">> {
  let account: Awaited<ReturnType<typeof createAccount>>;
  try {
    account = await createAccount(store.db, { name: "default", plan_id: planId });
  } catch (err) {
    if ((await countAccounts(store.db)) === 0) throw err;
    logger.info("another instance made the first start on this store");
    return { firstKey: undefined, firstAdmin: undefined };
  }
  const { secret } = await createKey(store.db, { account_id: account.id, name: "default" });
  // the console's first admin, so someone can log in; more users come from the console or the CLI
  const password = randomBytes(18).toString("base64url");
  const admin = await createUser(store.db, {
    account_id: account.id,
    email: adminEmail,
    role: "admin",
    password,
  });
  return { firstKey: { account: account.name, secret }, firstAdmin: { email: admin.email, password } };
}

/** A metrics.token_env that names no value would leave /metrics open: refuse to start. */
function readMetricsToken(config: Config, env: Record<string, string | undefined>): string | undefined {
  const name = config.metrics.token_env;
  if (name === undefined) return undefined;
  const token = env[name]?.trim();
  if (!token) throw new ConfigError(`metrics.token_env: the environment variable ${name} is not set`);
  return token;
}

export async function startGateway(fileConfig: Config, options: StartOptions = {}): Promise<Gateway> {
  // with `catalog.source: store`, the store's providers, models and plans replace the file's below
  let config = fileConfig;
  const env = options.env ?? process.env;
  const box = secretBoxOf(env);
  const logger = options.logger ?? createLogger(config.log_level);
  const metricsToken = readMetricsToken(config, env);
  const adminEmail = firstAdminEmail(config, env);
  const instanceId = randomUUID();
  const tracing = await startTracing(config.tracing, {
    env,
    logger,
    instanceId,
    version: VERSION,
  }).catch((err) => {
    throw err instanceof TracingConfigError ? new ConfigError(`environment: ${err.message}`) : err;
  });
  const store = openStore(
    config.store,
    warnUnlessUnreachable(logger, "the database closed an idle connection; the pool replaces it"),
  );
  let firstKey: Gateway["firstKey"];
  let firstAdmin: Gateway["firstAdmin"];
  try {
    await migrate(store);
    if (config.catalog.source === "store") {
      if (await seedFromFile(fileConfig, store.db, box))
        logger.info("the store's catalog was seeded from the configuration file");
      config = await withStoredCatalog(fileConfig, store.db, box);
    }
    if (options.bootstrap !== false && (await countAccounts(store.db)) === 0)
      ({ firstKey, firstAdmin } = await firstStart(store, config.default_plan, adminEmail, logger));
  } catch (err) {
    await store.close(); // or its pool keeps the process from exiting on the error
    throw err;
  }

  const metrics = new Metrics({ accountLabel: config.metrics.account_label, commit: env.GATEWAY_COMMIT });
  const now = options.now ?? Date.now;
  const shared = ledgerSetup(config, store, logger, instanceId, now);
  const { ledger, rates } = shared;
  const keys = new KeyCache(store.db);
  // A journal where something outlives this process to commit it: the local file on SQLite
  // (the next start replays it), Redis beside a shared ledger (a sweep of this instance's holds
  // commits it). PostgreSQL alone has neither: each answer waits for its record's commit.
  const journal = !config.store.records_journal
    ? undefined
    : store.dialect === "sqlite" && !shared.holds
      ? new RecordJournal(join(dirname(store.location), "records-journal"))
      : shared.redis && shared.holds
        ? new RedisRecordJournal(shared.redis, instanceId)
        : undefined;
  const records = new RecordWriter(store.db, {
    onError: (err, attempt) => {
      metrics.recordWriteErrors.inc();
      logger.error({ err, attempt }, "could not commit call records");
    },
    holds: shared.holds,
    now,
    journal,
    commitIntervalMs: config.store.records_commit_ms ?? defaultCommitMs(journal?.shared === true),
  });
  if (journal instanceof RecordJournal) await replayJournal(journal, records, logger);
  shared.holds?.commitLeftWith?.((instance) => records.commitLeft(instance));
  const routing = await startRouting(config, { db: store.db, metrics, logger, instanceId });
  const settingsDeps = { store, metrics, logger, routing, env };
  const settings = swappableSettings(await buildCallSettings(config, settingsDeps), logger);
  const loadFile = options.loadConfig ?? (() => fileConfig);
  const storeManaged = config.catalog.source === "store";
  const loadForReload = storeManaged ? async () => withStoredCatalog(loadFile(), store.db, box) : loadFile;
  const finisher = new CallFinisher({
    records,
    metrics,
    logger,
    get registry() {
      return settings.current.registry;
    },
  });
  const relay = new Relay(
    { ledger, rates, finisher, metrics, logger, keepAliveMs: config.server.sse_keepalive_ms, now },
    settings,
  );
  let closing = false;
  const deps: GatewayDeps = {
    // what a reload changes is read through these
    get config() {
      return settings.current.config;
    },
    get registry() {
      return settings.current.registry;
    },
    store,
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
    env,
    isClosing: () => closing,
    readiness: () => readiness({ store, redis: shared.redis, draining: () => closing }),
  };
  const storeReach = new Reachability("store", logger, {
    down: "the store is unreachable: calls fail until it answers again",
    up: "the store answers again",
  });
  // The revision poll reads the store four times a second: the heartbeat of its reachability.
  const watcher = new RevisionWatcher(store.db, {
    intervalMs: REVISION_POLL_MS,
    onChange: () => keys.clear(),
    onRead: () => storeReach.reached("revision poll"),
    onError: (err) => {
      if (isConnectionFailure(err)) storeReach.failed("revision poll", err);
      else logger.warn({ err }, "could not read the store's revision");
    },
  });
  await watcher.start();
  // A store-managed catalog changed by another instance (or this one): applied by the reload's
  // one path, so calls in flight keep the settings they started with.
  let appliedCatalog = storeManaged ? await readCatalogRevision(store.db) : undefined;
  let following = Promise.resolve();
  const followCatalog = () => {
    // one at a time; a failed one (the store not answering) does not stop the next
    following = following
      .catch(() => undefined)
      .then(async () => {
        const revision = await readCatalogRevision(store.db);
        if (revision === appliedCatalog) return;
        const result = await reload();
        if (result.applied) appliedCatalog = revision;
      });
    return following;
  };
  const catalogWatcher = storeManaged
    ? new RevisionWatcher(store.db, {
        intervalMs: CATALOG_POLL_MS,
        read: readCatalogRevision,
        onChange: () =>
          void followCatalog().catch((err) => logger.warn({ err }, "could not apply the store's catalog")),
        onError: warnUnlessUnreachable(logger, "could not read the catalog's revision"),
      })
    : undefined;
  await catalogWatcher?.start();
  deps.catalog = storeManaged
    ? new StoreCatalog({
        db: store.db,
        box,
        applyNow: followCatalog,
        // a change is tried the way a reload would build it, so one that would not apply is refused
        validate: async (data) => {
          const composed = composeConfig(settings.current.config, data);
          if (!composed.ok) return composed.issues;
          try {
            const trial = await buildCallSettings(composed.config, settingsDeps, undefined, true);
            await Promise.all([trial.safety.close(), trial.registry.close()]);
          } catch (err) {
            return [{ path: [], message: failureText(err) }];
          }
          return [];
        },
      })
    : new FileCatalog(() => settings.current.config);
  await shared.start();
  const live = new LiveUsagePublisher(store.db, ledger, rates, {
    instanceId,
    onError: warnUnlessUnreachable(logger, "could not publish live usage"),
  });
  live.start(LIVE_USAGE_MS);
  routing.publisher.start(LIVE_USAGE_MS);
  const retention = new RetentionJob(store.db, config.retention, logger);
  retention.start();

  const app = buildApp(deps);
  const connections = trackConnections(app.server);
  await app.ready();
  await options.beforeListen?.();
  await app.listen({ host: config.server.host, port: config.server.port });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.server.port;
  const host = config.server.host.includes(":") ? `[${config.server.host}]` : config.server.host;
  logger.info({ url: `http://${host}:${port}/v1`, store: store.location }, "gateway listening");

  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      closing = true;
      // Draining (docs/health.md): /readyz answers 503, so a load balancer takes the instance
      // out, and the listener stays open while requests are in flight, so a request it still
      // sends here is answered 503 shutting_down (with retry-after) rather than refused. Each
      // answer closes its connection, and connections kept alive between requests are closed.
      // In-flight requests finish, bounded by the grace period.
      const grace = setTimeout(() => {
        logger.warn("shutdown grace period over: closing the remaining connections");
        app.server.closeAllConnections();
      }, config.server.shutdown_grace_ms);
      grace.unref();
      connections.closeKeptAlive();
      // a connection that finished its answer before draining began does not close itself
      let sweep = setInterval(connections.closeKeptAlive, 50);
      await connections.idle();
      // Nothing in flight: stop listening. Node closes idle keep-alive connections once, when
      // close() is called, and does not count a connection that never carried a request as
      // idle: either would hold the shutdown until its keep-alive expires. Close every
      // connection without a request in flight, again as the last requests finish.
      clearInterval(sweep);
      sweep = setInterval(connections.closeIdle, 50);
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
      await catalogWatcher?.stop();
      await following.catch(() => undefined);
      // the providers and reviewers of the running configuration, and of any still retiring
      await settings.close();
      await store.close();
      logger.info("gateway stopped");
    })();
    return closed;
  };

  const reload = configReloader({
    ...settingsDeps,
    settings,
    load: loadForReload,
    source: options.configSource ?? "the configuration given at start",
  });

  return { app, deps, url: `http://${host}:${port}`, firstKey, firstAdmin, routing, reload, close };
}
