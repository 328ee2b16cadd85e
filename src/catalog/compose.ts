// A gateway's configuration with a catalog in place of the file's providers, models and
// plans, validated whole by the one schema (the file's own checks, cross-checks included):
// a catalog the file could not hold is refused with the field named, wherever it came from.

import { configSchema } from "../config/cross-check.ts";
import { deepFreeze } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import type { CatalogData } from "./entries.ts";
import type { CatalogEntry, CatalogKind } from "./types.ts";

export interface CatalogIssue {
  path: (string | number)[];
  message: string;
}

export type Composed = { ok: true; config: Config } | { ok: false; issues: CatalogIssue[] };

/** The running configuration's catalog as entries (the parsed form is valid input: the schema is idempotent on it). */
export function catalogOf(config: Config): CatalogData {
  const entries = (list: readonly object[]) => structuredClone(list) as CatalogEntry[];
  return {
    providers: entries(config.providers),
    models: entries(config.models),
    plans: entries(config.plans),
  };
}

/** `base`'s settings with `data` as its catalog. */
export function composeConfig(base: Config, data: CatalogData): Composed {
  const parsed = configSchema.safeParse({
    ...structuredClone(base),
    providers: data.providers,
    models: data.models,
    plans: data.plans,
  });
  if (parsed.success) return { ok: true, config: deepFreeze(parsed.data) };
  return {
    ok: false,
    issues: parsed.error.issues.map((i) => ({ path: i.path as (string | number)[], message: i.message })),
  };
}

/** `a.b[2].c`, as the file's errors write a path. */
export function formatPath(path: readonly (string | number)[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${p}` : p)).join("") || "(top level)";
}

/**
 * The path of an issue as the client of a change reads it: within the entry it changed
 * (`pricing.input`), else from the catalog's top (`plans[1].models[0]`: another entry that
 * the change broke, such as a plan naming a model being deleted).
 */
export function issueParam(issue: CatalogIssue, data: CatalogData, kind: CatalogKind, id: string): string {
  const [top, index, ...rest] = issue.path;
  if (top === kind && typeof index === "number" && data[kind][index]?.id === id && rest.length)
    return formatPath(rest);
  return formatPath(issue.path);
}
