// CORS for browser applications calling /v1 (server.cors_origins), over real HTTP: preflights
// and answers from an allowed origin carry the headers a browser needs; other origins, the
// console's routes and the default configuration get none.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";

const APP = "https://app.example";
const EVIL = "https://evil.example";

function preflight(gw: TestGateway, path: string, origin: string): Promise<Response> {
  return fetch(`${gw.origin}${path}`, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": "POST",
      // what the openai SDK sends from a browser, beside the two every client sends
      "access-control-request-headers": "authorization,content-type,x-stainless-os,x-stainless-retry-count",
    },
  });
}

const list = (value: string | null) => (value ?? "").split(",").map((s) => s.trim().toLowerCase());

function noCors(res: Response, what: string): void {
  for (const name of [
    "access-control-allow-origin",
    "access-control-allow-methods",
    "access-control-allow-headers",
  ])
    assert.equal(res.headers.get(name), null, `${what}: ${name}`);
}

describe("CORS with server.cors_origins", () => {
  let gw: TestGateway;
  let secret: string;
  before(async () => {
    gw = await startTestGateway({ config: { server: { host: "127.0.0.1", port: 0, cors_origins: [APP] } } });
    secret = (await gw.key(await gw.account("browser-app"))).secret;
  });
  after(async () => {
    await gw?.close();
  });

  test("a preflight from an allowed origin: 204 with the methods and headers it asked for", async () => {
    const res = await preflight(gw, "/v1/chat/completions", APP);
    assert.equal(res.status, 204);
    assert.equal(res.headers.get("access-control-allow-origin"), APP);
    assert.ok(list(res.headers.get("access-control-allow-methods")).includes("post"));
    const headers = list(res.headers.get("access-control-allow-headers"));
    for (const h of ["authorization", "content-type", "x-stainless-os", "x-stainless-retry-count"])
      assert.ok(headers.includes(h), `${h} allowed: ${headers}`);
    assert.ok(list(res.headers.get("vary")).includes("origin"));
    assert.ok(Number(res.headers.get("access-control-max-age")) > 0);
    assert.equal(res.headers.get("access-control-allow-credentials"), null, "no cookies: keys only");
  });

  test("answers to an allowed origin, errors too, carry the origin and expose the headers clients read", async () => {
    const ok = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { origin: APP, authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(ok.status, 200);
    await ok.arrayBuffer();
    assert.equal(ok.headers.get("access-control-allow-origin"), APP);
    const exposed = list(ok.headers.get("access-control-expose-headers"));
    for (const h of [
      "x-request-id",
      "request-id",
      "x-ratelimit-remaining-requests",
      "x-ratelimit-reset-tokens",
      "retry-after",
    ])
      assert.ok(exposed.includes(h), `${h} exposed: ${exposed}`);
    const refused = await fetch(`${gw.baseURL}/models`, { headers: { origin: APP } });
    assert.equal(refused.status, 401);
    assert.equal(
      refused.headers.get("access-control-allow-origin"),
      APP,
      "the browser may read the envelope",
    );
    assert.equal(((await refused.json()) as any).error.code, "missing_api_key");
  });

  test("another origin gets no CORS headers, preflight or not", async () => {
    noCors(await preflight(gw, "/v1/chat/completions", EVIL), "preflight");
    const res = await fetch(`${gw.baseURL}/models`, {
      headers: { origin: EVIL, authorization: `Bearer ${secret}` },
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    noCors(res, "GET");
  });

  test("the console's routes stay same-origin: no CORS headers even for an allowed origin", async () => {
    for (const path of ["/api/console/login", "/console/"])
      noCors(await preflight(gw, path, APP), `preflight ${path}`);
    const login = await fetch(`${gw.origin}/api/console/login`, {
      method: "POST",
      headers: { origin: APP, "content-type": "application/json" },
      body: JSON.stringify({ email: "a@b.c", password: "whatever-123" }),
    });
    assert.equal(login.status, 403);
    noCors(login, "POST /api/console/login");
  });
});

describe("CORS by default", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => {
    await gw?.close();
  });

  test("no origin is allowed: no CORS headers on preflights or answers", async () => {
    noCors(await preflight(gw, "/v1/chat/completions", APP), "preflight");
    const res = await fetch(`${gw.baseURL}/models`, { headers: { origin: APP } });
    await res.arrayBuffer();
    noCors(res, "GET");
  });
});
