// Validates values against the schemas of the OpenAPI contract
// (test/contracts/openai-chat-subset.openapi.json, a subset of OpenAI's own description of the API).
//
// The document says OpenAPI 3.1 (JSON Schema 2020-12) but still uses the 3.0 keyword
// `nullable: true` in places (e.g. a stream chunk's `usage` and `finish_reason`), which plain
// JSON Schema ignores. Those nodes are rewritten to `anyOf: [<node>, {type: "null"}]` so that
// `null` is accepted exactly where the document means it. `discriminator` is an OpenAPI
// annotation; the `oneOf` beside it does the validating, so it is dropped.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";

export const CONTRACT_PATH = fileURLToPath(
  new URL("../contracts/openai-chat-subset.openapi.json", import.meta.url),
);

const DOC_ID = "https://contract.invalid/openai-chat-subset.openapi.json";

/** keywords whose value is a schema */
const SCHEMA_KEYWORDS = new Set([
  "items",
  "additionalProperties",
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "unevaluatedItems",
  "unevaluatedProperties",
]);
/** keywords whose value is an array of schemas */
const SCHEMA_ARRAY_KEYWORDS = new Set(["anyOf", "allOf", "oneOf", "prefixItems"]);
/** keywords whose value maps names to schemas */
const SCHEMA_MAP_KEYWORDS = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);

/** Rewrites one OpenAPI schema object into JSON Schema 2020-12 (see the file comment). */
export function toJsonSchema(schema: unknown): unknown {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "nullable" || key === "discriminator") continue;
    if (SCHEMA_KEYWORDS.has(key)) out[key] = toJsonSchema(value);
    else if (SCHEMA_ARRAY_KEYWORDS.has(key) && Array.isArray(value)) out[key] = value.map(toJsonSchema);
    else if (SCHEMA_MAP_KEYWORDS.has(key) && value !== null && typeof value === "object")
      out[key] = mapSchemas(value as Record<string, unknown>);
    else out[key] = value; // annotations, enum, const, examples: kept as they are
  }
  if ((schema as { nullable?: unknown }).nullable === true) return { anyOf: [out, { type: "null" }] };
  return out;
}

export function mapSchemas(schemas: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(schemas).map(([name, s]) => [name, toJsonSchema(s)]));
}

export interface ContractValidator {
  /** The schema names under components.schemas. */
  readonly schemaNames: string[];
  /** Returns the validation errors of `value` against components.schemas[name] (empty if valid). */
  errors(name: string, value: unknown): ErrorObject[];
  /** Throws an AssertionError-like Error listing what does not match. */
  assertValid(name: string, value: unknown, what?: string): void;
}

export function loadContract(path: string = CONTRACT_PATH): ContractValidator {
  const doc = JSON.parse(readFileSync(path, "utf8")) as {
    components?: { schemas?: Record<string, unknown> };
  };
  const schemas = doc.components?.schemas;
  if (!schemas || typeof schemas !== "object") throw new Error(`${path} has no components.schemas`);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // Formats used by the document; validated for what they claim.
  ajv.addFormat("unixtime", { type: "number", validate: (n: number) => Number.isInteger(n) && n >= 0 });
  ajv.addFormat("uri", (s: string) => URL.canParse(s));
  ajv.addFormat("date", (s: string) => /^\d{4}-\d{2}-\d{2}$/.test(s));
  ajv.addSchema({ $id: DOC_ID, components: { schemas: mapSchemas(schemas) } });
  const compiled = new Map<string, ValidateFunction>();
  const validator = (name: string): ValidateFunction => {
    let fn = compiled.get(name);
    if (!fn) {
      if (!(name in schemas)) throw new Error(`the contract has no schema named ${name}`);
      fn = ajv.compile({ $ref: `${DOC_ID}#/components/schemas/${name}` });
      compiled.set(name, fn);
    }
    return fn;
  };
  return {
    schemaNames: Object.keys(schemas),
    errors(name, value) {
      const fn = validator(name);
      return fn(value) ? [] : [...(fn.errors ?? [])];
    },
    assertValid(name, value, what = name) {
      const errs = this.errors(name, value);
      if (errs.length === 0) return;
      const lines = errs.map((e) => `  ${e.instancePath || "(root)"} ${e.message ?? e.keyword}`);
      throw new Error(
        `${what} does not match the contract's ${name}:\n${lines.join("\n")}\nvalue: ${JSON.stringify(value)}`,
      );
    },
  };
}
