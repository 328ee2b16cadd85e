import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import Fastify, { type FastifyInstance } from "fastify";
import { loadConfig } from "../config/load.ts";
import { Metrics } from "../observability/metrics.ts";
import { CONSOLE_CSP, consoleStatic } from "./console-static.ts";
import type { GatewayDeps } from "./deps.ts";
import { registerErrorHandling } from "./error-handler.ts";

const INDEX =
  '<!doctype html><html><head><script type="module" src="/console/assets/index-AbC123xy.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = "console.log('console');";
const STYLE = "body{margin:0}";

/** The gateway's error handling (envelopes, 404) around the console plugin, without a store. */
async function appServing(dir: string): Promise<FastifyInstance> {
  const app = Fastify();
  // the handler reads deps for chat calls' records, which these requests never have, for the
  // discard bounds of a body it answered before reading, and counts what it refuses
  registerErrorHandling(app, {
    config: loadConfig({}),
    metrics: new Metrics(),
    isClosing: () => false,
  } as GatewayDeps);
  await app.register(consoleStatic, { dir });
  await app.ready();
  return app;
}

describe("console static files", () => {
  let root: string;
  let dist: string;
  let app: FastifyInstance;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "console-static-"));
    dist = join(root, "console");
    mkdirSync(join(dist, "assets"), { recursive: true });
    writeFileSync(join(dist, "index.html"), INDEX);
    writeFileSync(join(dist, "assets", "index-AbC123xy.js"), SCRIPT);
    writeFileSync(join(dist, "assets", "index-Zz9_8-7q.css"), STYLE);
    writeFileSync(join(dist, "favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
    writeFileSync(join(dist, ".secret"), "not for the web");
    // a file next to the build folder that traversal must not reach
    writeFileSync(join(root, "outside.txt"), "outside the build");
    app = await appServing(dist);
  });

  after(async () => {
    await app.close();
    rmSync(root, { recursive: true, force: true });
  });

  for (const url of [
    "/console",
    "/console/",
    "/console/records",
    "/console/tickets/t_123",
    "/console/keys?x=1",
  ])
    test(`${url} answers index.html with the security headers`, async () => {
      const res = await app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 200);
      assert.equal(res.body, INDEX);
      assert.equal(res.headers["content-type"], "text/html; charset=utf-8");
      assert.equal(res.headers["cache-control"], "no-cache");
      assert.equal(res.headers["content-security-policy"], CONSOLE_CSP);
      assert.equal(res.headers["x-content-type-options"], "nosniff");
      assert.equal(res.headers["referrer-policy"], "same-origin");
      assert.equal(res.headers["x-frame-options"], "DENY");
    });

  test("the policy allows only the app's own files: no inline scripts, no framing", () => {
    assert.match(CONSOLE_CSP, /default-src 'self'/);
    assert.match(CONSOLE_CSP, /script-src 'self'(;|$)/);
    assert.doesNotMatch(CONSOLE_CSP, /unsafe-inline|unsafe-eval/);
    assert.match(CONSOLE_CSP, /frame-ancestors 'none'/);
  });

  test("hashed assets have their content type and are cached for a year", async () => {
    const js = await app.inject({ method: "GET", url: "/console/assets/index-AbC123xy.js" });
    assert.equal(js.statusCode, 200);
    assert.equal(js.body, SCRIPT);
    assert.equal(js.headers["content-type"], "text/javascript; charset=utf-8");
    assert.equal(js.headers["cache-control"], "public, max-age=31536000, immutable");
    assert.equal(js.headers["x-content-type-options"], "nosniff");
    assert.equal(js.headers["content-length"], String(Buffer.byteLength(SCRIPT)));
    const css = await app.inject({ method: "GET", url: "/console/assets/index-Zz9_8-7q.css" });
    assert.equal(css.statusCode, 200);
    assert.equal(css.body, STYLE);
    assert.equal(css.headers["content-type"], "text/css; charset=utf-8");
  });

  test("files outside assets/ are revalidated, not cached for a year", async () => {
    const res = await app.inject({ method: "GET", url: "/console/favicon.svg" });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers["content-type"], "image/svg+xml");
    assert.equal(res.headers["cache-control"], "no-cache");
  });

  test("a matching ETag answers 304 without a body", async () => {
    const first = await app.inject({ method: "GET", url: "/console/" });
    const etag = first.headers.etag as string;
    assert.ok(etag);
    const again = await app.inject({ method: "GET", url: "/console/", headers: { "if-none-match": etag } });
    assert.equal(again.statusCode, 304);
    assert.equal(again.body, "");
  });

  test("HEAD answers the headers without the body", async () => {
    const res = await app.inject({ method: "HEAD", url: "/console/assets/index-AbC123xy.js" });
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, "");
    assert.equal(res.headers["content-type"], "text/javascript; charset=utf-8");
  });

  test("an unknown asset answers the gateway's 404 envelope", async () => {
    const res = await app.inject({ method: "GET", url: "/console/assets/missing-123.js" });
    assert.equal(res.statusCode, 404);
    assert.equal(res.headers["content-type"], "application/json; charset=utf-8");
    const body = res.json();
    assert.equal(body.error.code, "http_error");
    assert.equal(body.error.type, "dev_gateway_error");
    assert.match(body.error.message, /missing-123\.js/);
  });

  for (const url of [
    "/console/../outside.txt",
    "/console/%2e%2e/outside.txt",
    "/console/assets/%2e%2e/%2e%2e/outside.txt",
    "/console/assets%2f..%2f..%2foutside.txt",
    "/console/..%5coutside.txt",
    "/console/.secret",
    "/console/assets/.%2e/.secret",
    "/console/%00.js",
    "/console//etc/passwd.txt",
  ])
    test(`no file outside the build or hidden is served: ${url}`, async () => {
      const res = await app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 404, res.body);
      assert.doesNotMatch(res.body, /outside the build|not for the web/);
      assert.equal(res.json().error.code, "http_error");
    });

  test("a folder is not a file", async () => {
    const res = await app.inject({ method: "GET", url: "/console/assets.d" });
    assert.equal(res.statusCode, 404);
    mkdirSync(join(dist, "dir.js"));
    const folder = await app.inject({ method: "GET", url: "/console/dir.js" });
    assert.equal(folder.statusCode, 404);
  });
});

describe("console not built", () => {
  let root: string;
  let app: FastifyInstance;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "console-static-empty-"));
    app = await appServing(join(root, "console"));
  });

  after(async () => {
    await app.close();
    rmSync(root, { recursive: true, force: true });
  });

  for (const url of ["/console", "/console/records", "/console/assets/index-AbC123xy.js"])
    test(`${url} answers 503 saying how to build it`, async () => {
      const res = await app.inject({ method: "GET", url });
      assert.equal(res.statusCode, 503);
      assert.equal(res.headers["content-type"], "application/json; charset=utf-8");
      const body = res.json();
      assert.match(body.error.message, /npm run build:console/);
      assert.equal(body.error.code, "console_not_built");
    });

  test("building it later serves it without a restart", async () => {
    mkdirSync(join(root, "console"), { recursive: true });
    writeFileSync(join(root, "console", "index.html"), INDEX);
    const res = await app.inject({ method: "GET", url: "/console/overview" });
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, INDEX);
  });
});
