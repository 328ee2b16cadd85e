// The settings a call runs with, built from the configuration: the public models with their
// providers, plans, prices and rate limits (the Registry), the router, the content safety
// policy and the withheld-answers bound. A configuration reload (SIGHUP) reads the file again
// with the one loader, builds new settings and swaps them (src/lib/swappable.ts): a call keeps
// the settings it started with to its end, new calls get the new ones, and the old providers
// and reviewers are closed once their last call ended. What the reload takes from the file and
// what needs a restart: src/config/reload.ts.
import { isDeepStrictEqual } from "node:util";
import type { Logger } from "pino";
import { ConfigError } from "../config/load.ts";
import { type IdChanges, planReload, type ReloadChanges } from "../config/reload.ts";
import type { Config } from "../config/schema.ts";
import { Swappable } from "../lib/swappable.ts";
import { Registry } from "../models/registry.ts";
import type { Metrics } from "../observability/metrics.ts";
import { deploymentIds, type Routing } from "../routing/setup.ts";
import { SafetyPolicy } from "../safety/policy.ts";
import { buildReviewers } from "../safety/reviewers/index.ts";
import { WithheldLimiter } from "../safety/withheld-limiter.ts";
import type { Store } from "../store/db.ts";
import { registerModels } from "../store/models-seen.ts";
import { failureText } from "../store/reachability.ts";
import type { SwappedSettings } from "./call.ts";

export interface CallSettings extends SwappedSettings {
  /** what they were built from: the file's settings, with the restart-only ones as the gateway runs them */
  config: Config;
}

export interface SettingsDeps {
  store: Store;
  metrics: Metrics;
  logger: Logger;
  routing: Routing;
  /** where providers and reviewers read their keys */
  env: Record<string, string | undefined>;
}

/**
 * Builds the settings of `config`. With `previous` (a reload), what a model learned in this
 * process (the per-request overhead grown by overruns, src/relay/finish.ts) and the answers
 * withheld per key carry over where their settings did not change.
 */
export async function buildCallSettings(
  config: Config,
  deps: SettingsDeps,
  previous?: CallSettings,
  /** a trial build (a catalog change tried before it is written): nothing written to the store */
  trial = false,
): Promise<CallSettings> {
  // a trial runs inside the change's transaction, which on SQLite holds the one connection
  const created = trial
    ? new Map<string, number>()
    : await registerModels(
        deps.store.db,
        config.models.map((m) => m.id),
      );
  const registry = new Registry(config, created, deps.env);
  let reviewers: ReturnType<typeof buildReviewers>;
  try {
    reviewers = buildReviewers(config.safety.reviewers, { registry, env: deps.env });
  } catch (err) {
    await registry.close();
    throw err;
  }
  if (previous)
    for (const m of config.models) {
      const before = previous.registry.model(m.id);
      const now = registry.model(m.id); // none: its providers are disabled
      if (before && now && isDeepStrictEqual(before.config.prompt_overhead, m.prompt_overhead))
        Object.assign(now.overheads, before.overheads);
    }
  const sameWithheld =
    previous && isDeepStrictEqual(previous.config.safety.withheld_limit, config.safety.withheld_limit);
  return {
    config,
    registry,
    router: deps.routing.routerFor(config.routing),
    safety: new SafetyPolicy(config.safety, reviewers, deps.metrics),
    withheld: sameWithheld ? previous.withheld : new WithheldLimiter(config.safety.withheld_limit),
  };
}

/** The settings a gateway starts with, swapped by each reload; closing it closes their providers. */
export function swappableSettings(first: CallSettings, logger: Logger): Swappable<CallSettings> {
  return new Swappable(first, async (settings) => {
    await Promise.all([settings.safety.close(), settings.registry.close()]).catch((err) =>
      logger.warn({ err }, "could not close the providers of the previous configuration"),
    );
  });
}

export type ReloadResult =
  | { applied: true; changes: ReloadChanges; needRestart: string[] }
  | { applied: false; error: string };

export interface ReloadDeps extends SettingsDeps {
  settings: Swappable<CallSettings>;
  /**
   * reads and validates the configuration as the start did (the one loader), with the
   * store's catalog in place of the file's where the store manages it
   */
  load(): Config | Promise<Config>;
  /** where it is read from, for the log: a file, or the embedded defaults */
  source: string;
}

/** The changes by id, without the empty lists, for one log line. */
function summary(changes: ReloadChanges): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kind of ["providers", "models", "plans"] as const) {
    const c: Partial<IdChanges> = {};
    for (const [what, ids] of Object.entries(changes[kind]) as [keyof IdChanges, string[]][])
      if (ids.length) c[what] = ids;
    if (Object.keys(c).length) out[kind] = c;
  }
  if (changes.settings.length) out.settings = changes.settings;
  return out;
}

/**
 * What SIGHUP runs: reads the configuration again and applies it to new calls, or, if it is
 * not valid or cannot be built, keeps the running one and logs why. Reloads run one at a time.
 */
export function configReloader(deps: ReloadDeps): () => Promise<ReloadResult> {
  let last: Promise<unknown> = Promise.resolve();
  const reload = async (): Promise<ReloadResult> => {
    const { logger, settings, source } = deps;
    const refuse = (error: string): ReloadResult => {
      logger.error(
        { source, problems: error.split("\n") },
        "the configuration was not reloaded: the running configuration is kept",
      );
      return { applied: false, error };
    };
    let next: Config;
    try {
      next = await deps.load();
    } catch (err) {
      if (err instanceof ConfigError) return refuse(err.message);
      // the store not answering while it reads the catalog
      return refuse(failureText(err));
    }
    const running = settings.current;
    const plan = planReload(running.config, next);
    let built: CallSettings;
    try {
      built = await buildCallSettings(plan.config, deps, running);
    } catch (err) {
      // a reviewer's key variable not set, a term that normalises to nothing, the store not answering
      return refuse(failureText(err));
    }
    settings.replace(built);
    deps.routing.health.follow(deploymentIds(plan.config));
    if (plan.config.log_level !== running.config.log_level) logger.level = plan.config.log_level;
    if (plan.needRestart.length)
      logger.warn(
        { source, settings: plan.needRestart },
        "these settings changed in the configuration but take effect only after a restart: their running values are kept",
      );
    const changed = summary(plan.changes);
    logger.info(
      { source, ...changed },
      Object.keys(changed).length ? "configuration reloaded" : "configuration reloaded: no change to apply",
    );
    return { applied: true, changes: plan.changes, needRestart: plan.needRestart };
  };
  return () => {
    const result = last.then(reload, reload);
    last = result.catch(() => undefined);
    return result;
  };
}
