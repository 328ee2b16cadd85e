// Editing catalog entries (providers, models, plans) in the console: the forms and the JSON
// editor change a copy of the entry as the API showed it, and what is sent is made here. The
// server validates; these only keep the console from sending what it can know is wrong (a
// masked upstream key sent back as if it were the key) and say where the server's refusal is.
import type { CatalogEntry, CatalogKind, Deployment, ModelEntry, PlanEntry } from "./admin-types.ts";
import { deepEqual, isPlainObject } from "./json.ts";

/** How the API shows a literal upstream key: "…" and its last characters. */
export const isMaskedKey = (key: unknown): boolean => typeof key === "string" && key.startsWith("…");

/** Fields the API may add to an entry that are not the file's, so never sent back. */
const NOT_EDITABLE = new Set(["object"]);

/** The entry as the editors show it: the file's fields only. */
export function editable<T extends CatalogEntry>(entry: T): T {
  return Object.fromEntries(Object.entries(entry).filter(([k]) => !NOT_EDITABLE.has(k))) as T;
}

/**
 * An entry as typed in the JSON editor: an object with an id. Throws the reason, for the form.
 */
export function parseEntryJson(text: string): CatalogEntry {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`The JSON is not valid: ${(err as Error).message}`);
  }
  if (!isPlainObject(value)) throw new Error("The JSON must be one object: the entry's fields.");
  if (typeof value.id !== "string" || value.id === "") throw new Error('The entry needs an "id".');
  return value as CatalogEntry;
}

/** The entry without fields left empty in the form (undefined), for a POST. */
export function createBody(entry: CatalogEntry): CatalogEntry {
  return JSON.parse(JSON.stringify(entry)) as CatalogEntry;
}

/**
 * The PATCH of an edit: the top-level fields that changed, and null for those removed (back
 * to their default). Upstream keys, which the API shows masked, are kept by leaving them out;
 * a list that still holds a masked key but changed cannot be sent (the server would take the
 * mask for the key), so it throws the reason. An entry's id is its address: it cannot change.
 */
export function entryPatch(original: CatalogEntry, edited: CatalogEntry): Record<string, unknown> {
  if (edited.id !== original.id)
    throw new Error(`An entry's id cannot change (${original.id}): create a new entry and delete this one.`);
  const before = editable(original);
  const after = createBody(editable(edited));
  const patch: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(after))
    if (field !== "id" && !deepEqual(before[field], value)) patch[field] = value;
  for (const field of Object.keys(before))
    if (field !== "id" && before[field] !== undefined && !(field in after)) patch[field] = null;
  const keys = patch.api_keys;
  if (Array.isArray(keys) && keys.some(isMaskedKey))
    throw new Error(
      "The upstream keys are shown masked (…abcd) and cannot be sent back: to change them, replace the whole list with the keys themselves, or leave it as it was to keep them.",
    );
  return patch;
}

/**
 * The top-level field of the entry an error's `param` names, so the form can mark it:
 * "models[0].fallbacks" (the path in the catalog, for a model) and "fallbacks[1]" are both
 * `fallbacks` of a model. Null when there is none.
 */
export function fieldOfParam(param: string | null | undefined, kind: CatalogKind): string | null {
  if (!param) return null;
  const local = param.replace(/^body\./, "").replace(new RegExp(`^${kind}\\[\\d+\\]\\.`), "");
  const field = /^[^.[]+/.exec(local)?.[0];
  return field ?? null;
}

/** The deployments of a model, whichever of the file's two shapes it uses. */
export function deploymentsOf(model: Partial<ModelEntry>): Deployment[] {
  if (Array.isArray(model.deployments)) return model.deployments;
  if (typeof model.provider === "string")
    return [
      model.upstream_model === undefined
        ? { provider: model.provider }
        : { provider: model.provider, upstream_model: model.upstream_model },
    ];
  return [];
}

/**
 * The model with these deployments, in the shape it had: one deployment of the default weight
 * stays `provider` and `upstream_model` (or becomes them, for a new model); otherwise
 * `deployments`. An empty upstream model name is left out (it defaults to the public name).
 */
export function withDeployments(model: ModelEntry, rows: Deployment[]): ModelEntry {
  const clean = rows.map((row) => {
    const d: Deployment = { provider: row.provider };
    if (row.upstream_model) d.upstream_model = row.upstream_model;
    if (row.weight !== undefined) d.weight = row.weight;
    return d;
  });
  const { provider: _p, upstream_model: _u, deployments: _d, ...rest } = model;
  const only = clean[0];
  if (clean.length === 1 && only && (only.weight === undefined || only.weight === 1) && !model.deployments) {
    const single: ModelEntry = { ...rest, provider: only.provider };
    if (only.upstream_model) single.upstream_model = only.upstream_model;
    return single;
  }
  return clean.length === 0 ? rest : { ...rest, deployments: clean };
}

/** The plans whose accounts may call the model. */
export function plansIncluding(modelId: string, plans: readonly PlanEntry[]): string[] {
  return plans.filter((p) => Array.isArray(p.models) && p.models.includes(modelId)).map((p) => p.id);
}

/** A list typed as text: one item a line or separated by commas; blanks dropped. */
export function parseList(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((item) => item.trim())
    .filter(Boolean);
}

/**
 * A number typed in a form: empty is none (undefined). Whole numbers may have separators
 * ("1,000,000"); a decimal's comma is not taken for one ("1,5" is not 15). What is not a
 * number is kept as typed, for the server to refuse naming the field.
 */
export function numberOrText(text: string, integer = false): number | string | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  const n = Number(t.replaceAll(integer ? /[\s,_]/g : /[\s_]/g, ""));
  return Number.isFinite(n) ? n : t;
}

/**
 * A copy of the entry with the value at `path` (["pricing", "input"]) set. A form's field left
 * empty (undefined, an empty list) removes it, and so does an object left with no fields, so
 * the entry keeps only what the operator gave and the rest takes its default.
 */
export function withField<T extends Record<string, unknown>>(
  obj: T,
  path: readonly string[],
  value: unknown,
): T {
  const [head, ...rest] = path;
  if (head === undefined) return obj;
  const copy: Record<string, unknown> = { ...obj };
  const inner = copy[head];
  const next = rest.length === 0 ? value : withField(isPlainObject(inner) ? inner : {}, rest, value);
  const empty =
    next === undefined ||
    (Array.isArray(next) && next.length === 0) ||
    (isPlainObject(next) && Object.keys(next).length === 0);
  if (empty) delete copy[head];
  else copy[head] = next;
  return copy as T;
}
