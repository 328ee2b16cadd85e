// The admin API's OpenAPI 3.1 document, made from the operations (./operations.ts) and the
// zod schemas their routes validate with (./schemas.ts), so it says what the routes do. The
// catalog's entries are described by the configuration's own schemas (the providers' types,
// models, plans), which the catalog service validates with.
import { z } from "zod";
import { modelSchema, planSchema } from "../../../config/schema.ts";
import { providerSchema } from "../../../providers/catalog.ts";
import type { Operation } from "./contract.ts";
import { catalogOperationsByKind, operations } from "./operations.ts";
import { answerSchemas, requestSchemas } from "./schemas.ts";

export const ADMIN_PREFIX = "/admin/v1";

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const uri = (id: string) => `#/components/schemas/${id}`;

/** A schema as a component: what zod writes of the dialect and the id belongs to the document. */
function component(schema: unknown): Record<string, unknown> {
  const { $schema: _, $id: __, ...rest } = schema as Record<string, unknown>;
  return rest;
}

const CATALOG_SCHEMAS = { providers: "Provider", models: "Model", plans: "Plan" } as const;

const TAGS: { name: string; description: string }[] = [
  {
    name: "accounts",
    description: "Who is charged: plan, quota, money budget, disabled. Changes need `keys`.",
  },
  { name: "keys", description: "API keys: limits, rates, budgets, allowed models. Changes need `keys`." },
  { name: "users", description: "The console's users. Changes need `keys`." },
  { name: "records", description: "Call records of every account." },
  { name: "tickets", description: "Support tickets of every account. Changes need `keys`." },
  { name: "usage", description: "Aggregates of the call records." },
  { name: "providers", description: "The catalog's providers. Changes need `catalog`." },
  { name: "models", description: "The catalog's public models. Changes need `catalog`." },
  { name: "plans", description: "The catalog's plans. Changes need `catalog`." },
  { name: "admin-tokens", description: "The admin API's own tokens. Changes need `full`." },
  {
    name: "audit-log",
    description: "Every change made through the admin API, the console or the CLI's admin-tokens.",
  },
  { name: "meta", description: "This document." },
];

/** The errors every operation may answer, by status: the catalog's codes that lead to them. */
function errorResponses(op: Operation): Record<string, unknown> {
  const statuses: [number, string][] = [
    [400, "`invalid_request` naming the parameter (`param`), `invalid_json`"],
    [
      401,
      "`admin_unauthenticated`: no admin token or admin's console session, or an unknown or revoked token",
    ],
    [
      403,
      `\`admin_forbidden\`: the token's scopes do not include \`${op.scope}\`${op.scope === "read" ? " (any scope reads)" : " or `full`"}; with a console session, \`host_not_allowed\` or \`origin_mismatch\``,
    ],
  ];
  if (op.path.includes("{id}") || op.errors?.includes(404))
    statuses.push([404, "`not_found`: no such object"]);
  if (op.errors?.includes(409))
    statuses.push([
      409,
      op.catalog ? "`conflict`, `catalog_read_only`" : "`conflict`: it clashes with what exists",
    ]);
  return Object.fromEntries(
    statuses.map(([status, text]) => [
      String(status),
      { description: text, content: { "application/json": { schema: ref("Error") } } },
    ]),
  );
}

function parameters(op: Operation): unknown[] {
  const out: unknown[] = [];
  if (op.path.includes("{id}"))
    out.push({ name: "id", in: "path", required: true, schema: { type: "string" } });
  for (const [name, field] of Object.entries(op.query.shape as Record<string, z.ZodType>)) {
    const { description, ...schema } = component(z.toJSONSchema(field, { io: "input" }));
    out.push({
      name,
      in: "query",
      required: !field.safeParse(undefined).success,
      ...(description === undefined ? {} : { description }),
      schema,
    });
  }
  return out;
}

/** The component a schema was registered under. */
function nameOf(registry: typeof answerSchemas, schema: z.ZodType): string {
  const meta = registry.get(schema);
  if (!meta) throw new Error("an admin API schema is not registered in ./schemas.ts");
  return meta.id;
}

function requestBody(op: Operation): unknown {
  if (op.catalog?.body === "entry")
    return {
      required: true,
      content: { "application/json": { schema: ref(CATALOG_SCHEMAS[op.catalog.kind]) } },
    };
  if (op.catalog?.body === "patch")
    return { required: true, content: { "application/json": { schema: ref("CatalogPatch") } } };
  if (!op.body) return undefined;
  return {
    required: true,
    content: { "application/json": { schema: ref(nameOf(requestSchemas, op.body)) } },
  };
}

function successAnswer(op: Operation): unknown {
  const description = op.summary;
  if (op.status === 204) return { description };
  if (op.produces)
    return {
      description,
      content: Object.fromEntries(op.produces.map((type) => [type, { schema: { type: "string" } }])),
    };
  let schema: unknown;
  if (op.catalog?.answer === "list") schema = ref(`${CATALOG_SCHEMAS[op.catalog.kind]}List`);
  else if (op.catalog?.answer === "entry") schema = ref(CATALOG_SCHEMAS[op.catalog.kind]);
  else if (op.answer) schema = ref(nameOf(answerSchemas, op.answer));
  return { description, content: { "application/json": { schema } } };
}

function catalogList(item: string): Record<string, unknown> {
  return {
    type: "object",
    properties: {
      object: { const: "list" },
      data: { type: "array", items: ref(item) },
      has_more: { type: "boolean" },
      next_cursor: { type: ["string", "null"] },
    },
    required: ["object", "data", "has_more", "next_cursor"],
    additionalProperties: false,
  };
}

/** Every operation the document describes, the catalog's among them. */
export function allOperations(): Operation[] {
  const catalogOps = Object.values(catalogOperationsByKind).flatMap((ops) => Object.values(ops));
  return [...Object.values(operations), ...(catalogOps as Operation[])];
}

function build(version: string): Record<string, unknown> {
  const requests = z.toJSONSchema(requestSchemas, { io: "input", uri }).schemas;
  const answers = z.toJSONSchema(answerSchemas, { io: "output", uri }).schemas;
  const schemas: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries({ ...requests, ...answers })) schemas[name] = component(schema);
  for (const [name, schema] of [
    ["Provider", providerSchema],
    ["Model", modelSchema],
    ["Plan", planSchema],
  ] as const) {
    schemas[name] = component(z.toJSONSchema(schema, { io: "input" }));
    schemas[`${name}List`] = catalogList(name);
  }
  schemas.CatalogPatch = {
    type: "object",
    description:
      "Any of the entry's top-level fields, as the configuration file writes them; null removes a field (back to its default).",
    minProperties: 1,
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of allOperations()) {
    const body = requestBody(op);
    const params = parameters(op);
    paths[op.path] ??= {};
    paths[op.path]![op.method.toLowerCase()] = {
      operationId: op.id,
      tags: [op.tag],
      summary: op.summary,
      description: `${op.description ? `${op.description}\n\n` : ""}Scope: \`${op.scope}\`${op.scope === "read" ? " (or any other)" : " or `full`"}.`,
      "x-scope": op.scope,
      ...(params.length ? { parameters: params } : {}),
      ...(body ? { requestBody: body } : {}),
      responses: { [String(op.status)]: successAnswer(op), ...errorResponses(op) },
    };
  }
  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "chat-gateway admin API",
      version,
      description:
        "Operate the gateway: accounts, keys, users, records, tickets, usage, the catalog, admin tokens and the audit log (docs/admin-api.md). JSON in and out; times in Unix milliseconds, money in integer nanodollars. Errors in the gateway's envelope; `code` is one of docs/errors.md.",
    },
    servers: [{ url: ADMIN_PREFIX }],
    security: [{ adminToken: [] }, { consoleSession: [] }],
    tags: TAGS,
    paths,
    components: {
      securitySchemes: {
        adminToken: {
          type: "http",
          scheme: "bearer",
          description: "An admin token (`gwadmin-…`), made with `admin-tokens create` or POST /admin-tokens.",
        },
        consoleSession: {
          type: "apiKey",
          in: "cookie",
          name: "gw_session",
          description:
            "The console session of a user with the role admin: scope `full`. Changes must carry the gateway's own `Origin`.",
        },
      },
      schemas,
    },
  };
}

let built: { version: string; json: string } | undefined;

/** The document as JSON text, made once per process. */
export function openApiJson(version: string): string {
  if (built?.version !== version) built = { version, json: JSON.stringify(build(version)) };
  return built.json;
}

export function openApiDocument(version: string): Record<string, unknown> {
  return JSON.parse(openApiJson(version)) as Record<string, unknown>;
}
