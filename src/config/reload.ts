// What a configuration reload (SIGHUP, src/relay/settings.ts) takes from the file read again:
// everything a call reads when it starts (providers, models, plans with their prices and rate
// limits, routing, content safety, media URLs, stored responses, the default plan, the log
// level). What the gateway set up once at start (the listener, the store, Redis, the ledger,
// retention, metrics, counting, the cooldowns' thresholds) keeps its running value until a
// restart, and the reload names each such setting the file changed.
import { isDeepStrictEqual } from "node:util";
import { deepFreeze } from "./load.ts";
import type { Config } from "./schema.ts";

/**
 * The settings read once at start, as paths into the configuration. The cross-checks
 * (./cross-check.ts) compare fields within this group or within the rest, never across, so
 * the file's settings with these running values are as valid as the file.
 */
export const RESTART_ONLY: readonly (readonly string[])[] = [
  ["server"],
  ["store"],
  ["ledger"],
  ["routing", "cooldown"],
  ["retention"],
  ["metrics"],
  ["counting"],
  ["catalog"],
  // read by the first start only
  ["console"],
];

export interface IdChanges {
  added: string[];
  removed: string[];
  changed: string[];
}

export interface ReloadChanges {
  providers: IdChanges;
  models: IdChanges;
  plans: IdChanges;
  /** the other settings the reload changed, as paths ("safety.enabled", "routing.retry_on") */
  settings: string[];
}

export interface ReloadPlan {
  /** what the gateway runs with from now on: the file's settings, with the restart-only ones as they run */
  config: Config;
  /** the restart-only settings the file changed, as paths ("server.port"); their values are never shown */
  needRestart: string[];
  changes: ReloadChanges;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The paths of the leaves (or arrays, whole) that differ between `a` and `b`. */
function changedPaths(a: unknown, b: unknown, prefix: string[] = []): string[] {
  if (isRecord(a) && isRecord(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((k) => changedPaths(a[k], b[k], [...prefix, k]));
  }
  return isDeepStrictEqual(a, b) ? [] : [prefix.join(".")];
}

function at(config: unknown, path: readonly string[]): unknown {
  let value = config;
  for (const key of path) value = isRecord(value) ? value[key] : undefined;
  return value;
}

function idChanges<T extends { id: string }>(running: readonly T[], next: readonly T[]): IdChanges {
  const before = new Map(running.map((x) => [x.id, x]));
  const after = new Map(next.map((x) => [x.id, x]));
  return {
    added: [...after.keys()].filter((id) => !before.has(id)),
    removed: [...before.keys()].filter((id) => !after.has(id)),
    changed: [...after]
      .filter(([id, x]) => before.has(id) && !isDeepStrictEqual(before.get(id), x))
      .map(([id]) => id),
  };
}

const isRestartOnly = (path: string) =>
  RESTART_ONLY.some((p) => path === p.join(".") || path.startsWith(`${p.join(".")}.`));

/** What reloading `next` over the `running` configuration does. Both as the one loader made them. */
export function planReload(running: Config, next: Config): ReloadPlan {
  const needRestart = RESTART_ONLY.flatMap((path) =>
    changedPaths(at(running, path), at(next, path), [...path]),
  );
  const config = structuredClone(next) as Record<string, unknown>;
  for (const path of RESTART_ONLY) {
    let target = config;
    for (const key of path.slice(0, -1)) target = target[key] as Record<string, unknown>;
    target[path[path.length - 1]!] = at(running, path);
  }
  const byId = new Set(["providers", "models", "plans"]);
  const settings = changedPaths(running, next).filter(
    (p) => !isRestartOnly(p) && !byId.has(p.split(".")[0]!),
  );
  return {
    config: deepFreeze(config as Config),
    needRestart,
    changes: {
      providers: idChanges(running.providers, next.providers),
      models: idChanges(running.models, next.models),
      plans: idChanges(running.plans, next.plans),
      settings,
    },
  };
}
