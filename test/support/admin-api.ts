// What the admin API's suites (test/admin-api*.test.ts) start from: a gateway on one store in
// front of the mock upstream, accounts, a key, console users, an admin token of each scope,
// and a caller that checks every answer against the OpenAPI document the gateway serves at
// /admin/v1/openapi.json: the operation must exist, its status must be documented, and a JSON
// answer must match the documented schema (Ajv, JSON Schema 2020-12). The operations and
// statuses each suite saw are kept, so it can say which it never exercised.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { type AdminScope, createAdminToken } from "../../src/accounts/admin-tokens.ts";
import type { ConfigInput } from "../../src/config/schema.ts";
import {
  type ConsoleSession,
  type StoreKind,
  startTestGateway,
  TEST_MODEL,
  type TestGateway,
  testConfig,
} from "./gateway.ts";
import { type MockUpstream, startMockUpstream } from "./mock-openai-upstream.ts";

export interface Res {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface CallOptions {
  /** an admin token; default: the `full` token; null: none */
  token?: string | null;
  cookie?: string;
  body?: unknown;
  /** a body sent as is (with content-type application/json) */
  raw?: string;
  /** default: the gateway's own for a session's change, none otherwise */
  origin?: string | null;
  host?: string;
  /** not checked against the document: an unknown route */
  unchecked?: boolean;
}

export interface AdminApi {
  upstream: MockUpstream;
  gw: TestGateway;
  /** the admin token of each scope */
  tokens: Record<AdminScope, string>;
  tokenIds: Record<AdminScope, string>;
  acme: string;
  other: string;
  /** acme's key "app-one" */
  key: { id: string; secret: string };
  /** a console admin (of account ops) and a member of acme */
  admin: ConsoleSession;
  member: ConsoleSession;
  /** every secret the suite made or sent: none may reach a log line or the audit log */
  secrets: string[];
  /** the document the gateway served */
  document: any;
  /** "operationId status" of every answer checked */
  seen: Set<string>;
  call(method: string, path: string, options?: CallOptions): Promise<Res>;
  /** A chat call through /v1; its request id, status and error code. */
  chat(
    secret: string,
    content: string,
    model?: string,
  ): Promise<{ status: number; id: string; code?: string }>;
}

export function refused(res: Res, status: number, code: string, param?: string | null): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${res.text}`);
  assert.equal(res.body?.error?.code, code, res.text);
  assert.equal(typeof res.body.error.message, "string");
  assert.equal(typeof res.body.error.type, "string");
  if (param !== undefined) assert.equal(res.body.error.param, param, res.text);
}

const DOC_ID = "https://admin.invalid/openapi.json";

/** fetch() will not send a Host header of our choosing; node:http will. */
async function rawRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<Response> {
  const { request } = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode!, headers: h }));
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

interface Checker {
  check(method: string, path: string, res: Res): string;
}

/** Checks answers against the document: the operation, its status, its schema. */
export function documentChecker(document: any): Checker {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat("uri", (s: string) => URL.canParse(s));
  ajv.addSchema({ $id: DOC_ID, components: { schemas: document.components.schemas } });
  // every schema of the document compiles
  for (const name of Object.keys(document.components.schemas))
    ajv.compile({ $ref: `${DOC_ID}#/components/schemas/${name}` });
  const compiled = new Map<string, ValidateFunction>();
  const routes = Object.entries(document.paths as Record<string, Record<string, any>>).map(
    ([template, ops]) => ({
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
      literal: !template.includes("{"),
      ops,
    }),
  );
  // literal paths first: /records/export before a /records/{id}
  routes.sort((a, b) => Number(b.literal) - Number(a.literal));
  const prefix: string = document.servers[0].url;
  return {
    check(method, path, res) {
      const bare = path.split("?")[0]!;
      const route = routes.find((r) => r.pattern.test(bare) && r.ops[method.toLowerCase()]);
      assert.ok(route, `${method} ${prefix}${bare} is no operation of the document`);
      const op = route.ops[method.toLowerCase()];
      const answer = op.responses[String(res.status)];
      assert.ok(
        answer,
        `${op.operationId} answered ${res.status}, which the document does not list: ${res.text}`,
      );
      const json = answer.content?.["application/json"];
      if (res.status === 204) assert.equal(res.text, "", `${op.operationId}: a 204 has no body`);
      else if (json) {
        assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
        const ref: string = json.schema.$ref;
        let fn = compiled.get(ref);
        if (!fn) {
          fn = ajv.compile({ $ref: `${DOC_ID}${ref}` });
          compiled.set(ref, fn);
        }
        if (!fn(res.body)) {
          const lines = (fn.errors ?? []).map(
            (e) => `  ${e.instancePath || "(root)"} ${e.message ?? e.keyword}`,
          );
          assert.fail(
            `${op.operationId} ${res.status} does not match ${ref}:\n${lines.join("\n")}\n${res.text.slice(0, 2000)}`,
          );
        }
      } else {
        const types = Object.keys(answer.content ?? {});
        const type = res.headers.get("content-type") ?? "";
        assert.ok(
          types.some((t) => type.startsWith(t)),
          `${op.operationId}: ${type} is not one of ${types}`,
        );
      }
      return `${op.operationId} ${res.status}`;
    },
  };
}

/**
 * Starts the suite's gateway and parties in a before() of the describe() it is called in, and
 * closes them after.
 */
export function adminApiSuite(
  store: StoreKind,
  options: { config?: Partial<ConfigInput>; upstreamKeys?: string[] } = {},
): AdminApi {
  const api = { secrets: [] as string[], seen: new Set<string>() } as unknown as AdminApi;
  let checker: Checker | undefined;

  async function send(method: string, path: string, o: CallOptions): Promise<Res> {
    const headers: Record<string, string> = {};
    const token = o.token === undefined ? api.tokens.full : o.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (o.cookie) headers.cookie = o.cookie;
    const origin = o.origin === undefined ? (o.cookie && method !== "GET" ? api.gw.origin : null) : o.origin;
    if (origin) headers.origin = origin;
    if (o.host) headers.host = o.host;
    let body: string | undefined;
    if (o.body !== undefined || o.raw !== undefined) {
      headers["content-type"] = "application/json";
      body = o.raw ?? JSON.stringify(o.body);
    }
    const url = `${api.gw.origin}/admin/v1${path}`;
    const res = o.host
      ? await rawRequest(url, method, headers, body)
      : await fetch(url, { method, headers, body });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, body: json, text };
  }

  api.call = async (method, path, o = {}) => {
    const res = await send(method, path, o);
    if (!o.unchecked) {
      assert.ok(checker, "the document is loaded in the suite's before()");
      api.seen.add(checker.check(method, path, res));
      assert.equal(res.headers.get("cache-control"), "no-store", `${method} ${path}: cache-control`);
    }
    return res;
  };

  api.chat = async (secret, content, model = TEST_MODEL) => {
    const res = await fetch(`${api.gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content }], temperature: 0.5 }),
    });
    const body = (await res.json()) as any;
    return { status: res.status, id: res.headers.get("x-request-id")!, code: body?.error?.code };
  };

  before(async () => {
    api.upstream = await startMockUpstream({
      apiKey: ["sk-upstream-secret-123", ...(options.upstreamKeys ?? [])],
    });
    const models = testConfig(api.upstream).models.map((m) =>
      m.id === TEST_MODEL ? { ...m, pricing: { input: 2, output: 8 } } : m,
    );
    const gw = await startTestGateway({
      upstream: api.upstream,
      store,
      config: { models, ...options.config },
    });
    api.gw = gw;
    api.acme = await gw.account("acme");
    api.other = await gw.account("other");
    const ops = await gw.account("ops");
    api.key = await gw.key(api.acme, { name: "app-one" });
    api.admin = await gw.consoleUser(ops, { role: "admin" });
    api.member = await gw.consoleUser(api.acme, { role: "member" });
    const db = gw.gateway.deps.store.db;
    api.tokens = {} as AdminApi["tokens"];
    api.tokenIds = {} as AdminApi["tokenIds"];
    for (const scope of ["read", "keys", "catalog", "full"] as const) {
      const { token, secret } = await createAdminToken(
        db,
        { name: `test-${scope}`, scopes: [scope] },
        "test",
      );
      api.tokens[scope] = secret;
      api.tokenIds[scope] = token.id;
    }
    api.secrets.push(api.key.secret, api.admin.password, api.member.password, ...Object.values(api.tokens));
    const doc = await send("GET", "/openapi.json", {});
    assert.equal(doc.status, 200, doc.text);
    api.document = doc.body;
    checker = documentChecker(doc.body);
    api.seen.add(checker.check("GET", "/openapi.json", doc));
  });

  after(async () => {
    await api.gw?.close();
    await api.upstream?.close();
  });

  return api;
}

/** The suite's last tests: what it sent never reached the logs; which operations it exercised. */
export function suiteEnd(api: AdminApi, expected: { operations: string[] }): void {
  test("no token, key or password reached a log line", () => {
    const logs = api.gw.logs.join("");
    assert.ok(logs.length > 0);
    for (const s of api.secrets) assert.ok(!logs.includes(s), `a secret is in the logs: ${s.slice(0, 10)}…`);
  });
  test("every operation of the suite's was answered and checked against the document", () => {
    const missing = expected.operations.filter((id) => ![...api.seen].some((s) => s.startsWith(`${id} 2`)));
    assert.deepEqual(missing, [], "operations never answered with success");
  });
}
