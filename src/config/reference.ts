// Renders the reference of docs/configuration.md from the schema: every field with its path,
// type, default, allowed values, environment variable and description (the schema's
// `.describe()`), so the documentation says what the code accepts. `npm run docs:config`
// rewrites it in place; reference.test.ts fails when the two drift apart or a field has no
// description.
import { readFileSync, writeFileSync } from "node:fs";
import { z } from "zod";
import { ENV_FIELDS } from "./load.ts";
import { configSections } from "./schema.ts";

export const START = "<!-- config:start (generated from src/config/schema.ts by `npm run docs:config`) -->";
export const END = "<!-- config:end -->";

type Schema = z.core.$ZodType;
const defOf = (s: Schema): any => s._zod.def;

/** The variable that sets each field; the first start reads the admin's e-mail itself (src/server.ts). */
const ENV: Record<string, string> = {
  ...Object.fromEntries(ENV_FIELDS.map((f) => [f.path.join("."), f.variable])),
  "console.first_admin_email": "GATEWAY_FIRST_ADMIN_EMAIL",
};

export interface Row {
  path: string;
  type: string;
  default: string;
  allowed: string;
  description: string | undefined;
}

export interface Table {
  /** the heading: a top-level key, or a list entry of one `type` */
  title: string;
  depth: 2 | 3;
  description: string | undefined;
  rows: Row[];
}

/** A field's schema without its wrappers, with what they said. */
function unwrap(schema: Schema) {
  let s = schema;
  let description: string | undefined;
  let required = true;
  let fallback: { value: unknown } | undefined;
  for (;;) {
    description ??= z.globalRegistry.get(s)?.description;
    const def = defOf(s);
    if (def.type === "optional") required = false;
    else if (def.type === "default" || def.type === "prefault") fallback ??= { value: def.defaultValue };
    else if (def.type !== "pipe") break;
    s = def.type === "pipe" ? def.in : def.innerType;
  }
  return { schema: s, description, required, fallback };
}

const code = (v: unknown) => `\`${String(v)}\``;

function yamlValue(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(yamlValue).join(", ")}]`;
  if (v && typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** What a check says a value must be ("must be an e-mail address": "an e-mail address"). */
function mustBe(check: any): string | undefined {
  const message = check?._zod?.def?.error?.({});
  return typeof message === "string" && message.startsWith("must be ") ? message.slice(8) : undefined;
}

/** The range the checks allow: of a number, or of a length in `unit` (characters, items). */
function bounds(checks: any[], integer: boolean, unit?: string): string {
  let low: number | undefined;
  let high: number | undefined;
  let above = false;
  for (const c of checks.map((c) => c._zod.def)) {
    if (c.check === "greater_than")
      [low, above] = integer && !c.inclusive ? [c.value + 1, false] : [c.value, !c.inclusive];
    if (c.check === "less_than") high = integer && !c.inclusive ? c.value - 1 : c.value;
    if (c.check === "min_length") low = c.minimum;
    if (c.check === "max_length") high = c.maximum;
  }
  if (unit) {
    if (high !== undefined) return low ? `${low} to ${high} ${unit}` : `at most ${high} ${unit}`;
    if (low === undefined) return "";
    return low === 1 ? "not empty" : `at least ${low} ${unit}`;
  }
  const from = low === undefined ? undefined : above ? `> ${low}` : `≥ ${low}`;
  if (from && high !== undefined) return above ? `${from}, ≤ ${high}` : `${low} to ${high}`;
  return from ?? (high === undefined ? "" : `≤ ${high}`);
}

/** The type and allowed values of a schema that is not an object with fields of its own. */
function describeValue(schema: Schema): { type: string; allowed: string } {
  const def = defOf(schema);
  const checks: any[] = def.checks ?? [];
  const phrases = checks.map(mustBe).filter((p): p is string => p !== undefined);
  switch (def.type) {
    case "string": {
      if (def.format === "url") return { type: "string", allowed: ["an http(s) URL", ...phrases].join("; ") };
      const patterns = checks.filter((c) => c._zod.def.format === "regex" && !mustBe(c));
      const lengths = checks.filter((c) => c._zod.def.check !== "string_format");
      // a value that must match a rule is not empty: only its longest length is news
      const length = bounds(
        phrases.length ? lengths.filter((c) => c._zod.def.check === "max_length") : lengths,
        true,
        "characters",
      );
      const allowed = [
        ...phrases,
        ...patterns.map((c) => `matches ${code(String(c._zod.def.pattern))}`),
        length,
      ];
      return { type: "string", allowed: allowed.filter(Boolean).join("; ") };
    }
    case "number": {
      const integer = checks.some((c) => c._zod.def.format === "safeint");
      const rule = checks.filter((c) => c._zod.def.check === "custom").map(mustBe);
      return { type: integer ? "integer" : "number", allowed: rule[0] ?? bounds(checks, integer) };
    }
    case "boolean":
      return { type: "boolean", allowed: "" };
    case "enum":
      return { type: "string", allowed: Object.values(def.entries).map(code).join(", ") };
    case "literal":
      return { type: "string", allowed: def.values.map(code).join(", ") };
    case "union": {
      const options: { type: string; allowed: string }[] = def.options.map(describeValue);
      const named = def.options.every((o: Schema) => ["enum", "literal"].includes(defOf(o).type));
      return {
        type: [...new Set(options.map((o) => o.type))].join(" or "),
        allowed: options
          .map((o) => o.allowed)
          .filter(Boolean)
          .join(named ? ", " : "; "),
      };
    }
    case "array": {
      const item = describeValue(unwrap(def.element).schema);
      const count = bounds(checks, true, "items");
      return {
        type: `list of ${item.type === "object" ? "objects" : item.type}`,
        allowed: [item.allowed, count].filter(Boolean).join("; "),
      };
    }
    case "record": {
      const value = describeValue(unwrap(def.valueType).schema);
      return { type: `map of string to ${value.type}`, allowed: value.allowed };
    }
    case "object":
      return { type: "object", allowed: "" };
    default:
      throw new Error(`the reference cannot render a zod ${def.type}`);
  }
}

const isObject = (s: Schema) => defOf(s).type === "object";
const variantsOf = (s: Schema): Schema[] | undefined => {
  const def = defOf(s);
  return def.type === "union" && def.discriminator ? def.options : undefined;
};

/**
 * The rows of `field` at `path` and below; a list of entries chosen by `type` (providers,
 * reviewers) gets a table per type, pushed to `tables`.
 */
function rowsOf(path: string, field: Schema, tables: Table[]): Row[] {
  const { schema, description, required, fallback } = unwrap(field);
  const def = defOf(schema);
  const element = def.type === "array" ? unwrap(def.element).schema : undefined;
  const variants = element && variantsOf(element);
  const { type, allowed } = variants
    ? { type: "list of objects", allowed: `by \`${defOf(element).discriminator}\`, below` }
    : describeValue(schema);
  const shown = fallback
    ? isObject(schema)
      ? ""
      : code(yamlValue(fallback.value))
    : required
      ? "required"
      : "";
  const row: Row = { path, type, default: shown, allowed, description };
  if (isObject(schema)) return [row, ...fieldRows(path, schema, tables)];
  if (element && isObject(element)) return [row, ...fieldRows(`${path}[]`, element, tables)];
  if (variants) variantTables(`${path}[]`, element!, variants, tables);
  return [row];
}

function fieldRows(prefix: string, object: Schema, tables: Table[]): Row[] {
  return Object.entries(defOf(object).shape as Record<string, Schema>).flatMap(([key, field]) =>
    rowsOf(`${prefix}.${key}`, field, tables),
  );
}

function variantTables(path: string, union: Schema, variants: Schema[], tables: Table[]): void {
  const key = defOf(union).discriminator as string;
  for (const variant of variants) {
    const value = defOf(unwrap(defOf(variant).shape[key]).schema).values[0];
    const nested: Table[] = [];
    const rows = fieldRows(path, variant, nested);
    tables.push(
      { title: `\`${path}\` with \`${key}: ${value}\``, depth: 3, description: undefined, rows },
      ...nested,
    );
  }
}

/**
 * One table per top-level key (a section's description above its table, a list's or a
 * value's in its first row), and one per type of the lists whose entries have a type.
 */
export function referenceTables(): Table[] {
  return Object.entries(configSections.shape as Record<string, Schema>).flatMap(([key, field]) => {
    const { schema, description } = unwrap(field);
    const below: Table[] = [];
    const section = isObject(schema);
    const rows = section ? fieldRows(key, schema, below) : rowsOf(key, field, below);
    return [
      { title: `\`${key}\``, depth: 2 as const, description: section ? description : undefined, rows },
      ...below,
    ];
  });
}

/** The paths of the fields (and sections) that have no description. */
export function undescribed(): string[] {
  const sections = Object.entries(configSections.shape as Record<string, Schema>)
    .filter(([, field]) => !unwrap(field).description)
    .map(([key]) => key);
  const rows = referenceTables().flatMap((t) => t.rows.filter((r) => !r.description).map((r) => r.path));
  return [...new Set([...sections, ...rows])];
}

const cell = (text: string) => text.replaceAll("|", "\\|");

export function renderReference(): string {
  const out = [
    START,
    "",
    "## Environment variables",
    "",
    "| variable | sets |",
    "|---|---|",
    "| `GATEWAY_CONFIG` | the configuration file (YAML); without it, the embedded defaults |",
    ...Object.entries(ENV).map(([path, variable]) => `| \`${variable}\` | \`${path}\` |`),
  ];
  for (const table of referenceTables()) {
    out.push("", `${"#".repeat(table.depth)} ${table.title}`, "");
    if (table.description) out.push(table.description, "");
    out.push("| field | type | default | allowed | env | description |", "|---|---|---|---|---|---|");
    for (const r of table.rows) {
      const env = ENV[r.path] ? code(ENV[r.path]) : "";
      out.push(
        `| \`${r.path}\` | ${cell(r.type)} | ${cell(r.default)} | ${cell(r.allowed)} | ${env} | ${cell(r.description ?? "")} |`,
      );
    }
  }
  out.push("", END);
  return out.join("\n");
}

/** The document with its reference replaced by the current one. */
export function withReference(doc: string): string {
  const from = doc.indexOf(START);
  const to = doc.indexOf(END);
  if (from === -1 || to === -1) throw new Error("docs/configuration.md has no reference markers");
  return doc.slice(0, from) + renderReference() + doc.slice(to + END.length);
}

if (import.meta.main) {
  const missing = undescribed();
  if (missing.length) throw new Error(`fields without a description (.describe()): ${missing.join(", ")}`);
  const file = new URL("../../docs/configuration.md", import.meta.url);
  writeFileSync(file, withReference(readFileSync(file, "utf8")));
  console.log("docs/configuration.md reference updated");
}
