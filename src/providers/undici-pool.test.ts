import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { Pool } from "./undici-pool.ts";

describe("undici's pool without the rest of undici", () => {
  it("answers request() over a real connection", async () => {
    const server = createServer((req, res) => res.end(`${req.method} ${req.url}`));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
    try {
      const response = await pool.request({ method: "POST", path: "/v1/x", body: "{}" });
      assert.equal(response.statusCode, 200);
      assert.equal(await response.body.text(), "POST /v1/x");
    } finally {
      await pool.close();
      server.close();
    }
  });

  it("loads the pool's modules only: not undici's entry, fetch or WebSocket", () => {
    const probe = `
      const { createRequire } = await import("node:module");
      await import(${JSON.stringify(new URL("./undici-pool.ts", import.meta.url).href)});
      const files = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes("/node_modules/undici/"));
      console.log(JSON.stringify(files.map((f) => f.slice(f.indexOf("/node_modules/undici/") + 21))));
    `;
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", probe], { encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    const files = JSON.parse(run.stdout) as string[];
    assert.ok(files.includes("lib/dispatcher/pool.js"), files.join(" "));
    assert.ok(!files.includes("index.js"), "undici's entry");
    assert.ok(
      !files.some((f) => f.startsWith("lib/web/")),
      files.filter((f) => f.startsWith("lib/web/")).join(" "),
    );
    assert.ok(files.length < 40, `${files.length} modules`);
  });
});
