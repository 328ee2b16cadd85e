// What the console API's suites (test/console-api-*.test.ts, one per route group of
// src/http/routes/console/) start from: a gateway on one store in front of the mock upstream,
// TEST_MODEL priced, the accounts and console users every group is called by, and the calls
// they make: console routes with a cookie and an Origin, chats through /v1, refusals checked.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  type ConsoleSession,
  type StoreKind,
  startTestGateway,
  TEST_MODEL,
  type TestGateway,
  testConfig,
} from "./gateway.ts";
import { type MockUpstream, startMockUpstream } from "./mock-openai-upstream.ts";

export const STORES: StoreKind[] = (process.env.TEST_STORES ?? "sqlite,postgres")
  .split(",")
  .map((s) => s.trim())
  .filter((s): s is StoreKind => s === "sqlite" || s === "postgres");

export interface Res {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/**
 * Lets the clock move on a millisecond or two, so rows made one after another get distinct
 * times and their newest-first order is the order they were made in (ties are broken by id).
 */
export const tick = () => new Promise((resolve) => setTimeout(resolve, 3));

/** the mock counts prompt tokens as whitespace-separated words */
export const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

/**
 * TEST_MODEL's prices in these tests, USD per million tokens: per token, 2,000 nanodollars of
 * fresh prompt, 500 of cache reads and 8,000 of output. demo stays unpriced.
 */
const PRICING = { input: 2, cached_input: 0.5, output: 8 };
/** A call's cost by hand, in nanodollars. */
export const costOf = (prompt: number, completion: number, cached = 0) =>
  (prompt - cached) * 2_000 + cached * 500 + completion * 8_000;

export function refused(res: Res, status: number, code: string, param?: string | null): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${res.text}`);
  assert.equal(res.body?.error?.code, code, res.text);
  assert.equal(typeof res.body.error.message, "string");
  assert.equal(typeof res.body.error.type, "string");
  if (param !== undefined) assert.equal(res.body.error.param, param, res.text);
}

/** The suite's gateway and parties; filled in by the suite's first before(). */
export interface ConsoleApiParties {
  upstream: MockUpstream;
  gw: TestGateway;
  /** the account the owner, the member and the key belong to */
  acme: string;
  /** the outsider's account */
  other: string;
  /** the admin's account */
  ops: string;
  owner: ConsoleSession;
  member: ConsoleSession;
  outsider: ConsoleSession;
  admin: ConsoleSession;
  /** acme's key "app-one" */
  key: { id: string; secret: string };
}

export interface ConsoleApi extends ConsoleApiParties {
  /** every password, cookie and key the suite used: none may reach a log line */
  secrets: string[];
  call(
    method: string,
    path: string,
    opts?: { cookie?: string; body?: unknown; raw?: string; origin?: string | null },
  ): Promise<Res>;
  get(path: string, who: ConsoleSession | undefined): Promise<Res>;
  /** A chat call through /v1; returns its request id. */
  chat(
    secret: string,
    content: string,
    model?: string,
  ): Promise<{ status: number; id: string; code?: string }>;
  v1Status(secret: string): Promise<{ status: number; code?: string }>;
}

/**
 * Starts the suite's gateway and parties in a before() of the describe() it is called in, and
 * closes them after. The calls may be taken out of the answer at once; the parties are there
 * once that before() ran.
 */
export function consoleApiSuite(store: StoreKind): ConsoleApi {
  const api = { secrets: [] as string[] } as unknown as ConsoleApi;

  api.call = async (method, path, opts = {}) => {
    const headers: Record<string, string> = {};
    if (opts.cookie) headers.cookie = opts.cookie;
    const origin = opts.origin === undefined ? (method === "GET" ? null : api.gw.origin) : opts.origin;
    if (origin) headers.origin = origin;
    let body: string | undefined;
    if (opts.body !== undefined || opts.raw !== undefined) {
      headers["content-type"] = "application/json";
      body = opts.raw ?? JSON.stringify(opts.body);
    }
    const res = await fetch(`${api.gw.origin}/api/console${path}`, { method, headers, body });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, body: json, text };
  };

  api.get = (path, who) => api.call("GET", path, { cookie: who?.cookie });

  api.chat = async (secret, content, model = TEST_MODEL) => {
    const res = await fetch(`${api.gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content }], temperature: 0.5 }),
    });
    const body = (await res.json()) as any;
    return { status: res.status, id: res.headers.get("x-request-id")!, code: body?.error?.code };
  };

  api.v1Status = async (secret) => {
    const res = await fetch(`${api.gw.baseURL}/models`, { headers: { authorization: `Bearer ${secret}` } });
    const body = (await res.json()) as any;
    return { status: res.status, code: body?.error?.code };
  };

  before(async () => {
    api.upstream = await startMockUpstream({ apiKey: "sk-upstream-secret-123" });
    const models = testConfig(api.upstream).models.map((m) =>
      m.id === TEST_MODEL ? { ...m, pricing: PRICING } : m,
    );
    const gw = await startTestGateway({ upstream: api.upstream, store, config: { models } });
    api.gw = gw;
    api.acme = await gw.account("acme");
    api.other = await gw.account("other");
    api.ops = await gw.account("ops");
    api.owner = await gw.consoleUser(api.acme, { role: "owner" });
    api.member = await gw.consoleUser(api.acme, { role: "member" });
    api.outsider = await gw.consoleUser(api.other, { role: "owner" });
    api.admin = await gw.consoleUser(api.ops, { role: "admin" });
    api.key = await gw.key(api.acme, { name: "app-one" });
    const { owner, member, outsider, admin } = api;
    api.secrets.push(api.key.secret, owner.password, member.password, outsider.password, admin.password);
    api.secrets.push(...[owner, member, outsider, admin].map((s) => s.cookie.split("=")[1]!));
  });

  after(async () => {
    await api.gw?.close();
    await api.upstream?.close();
  });

  return api;
}

/** The suite's last test: what it sent the gateway never reached its logs. */
export function noSecretInTheLogs(api: ConsoleApi): void {
  test("no password, cookie or key reached a log line", () => {
    const logs = api.gw.logs.join("");
    assert.ok(logs.length > 0);
    for (const s of api.secrets) assert.ok(!logs.includes(s), `a secret is in the logs: ${s.slice(0, 6)}…`);
  });
}
