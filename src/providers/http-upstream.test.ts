import assert from "node:assert/strict";
import { test } from "node:test";
import { UpstreamError } from "../errors/upstream-error.ts";
import { configuredKeys, keyFault, UpstreamHeaders } from "./http-upstream.ts";
import { redactSecrets } from "./secrets.ts";

const ENV = { KEY_A: "sk-env-a-0001", KEY_B: "sk-env-b-0002", EMPTY: "" };

test("the pool: api_key_env, then api_keys_env, then api_keys; a variable not set adds nothing", () => {
  assert.deepEqual(
    configuredKeys(
      { api_key_env: "KEY_A", api_keys_env: ["UNSET", "KEY_B", "EMPTY"], api_keys: ["sk-stored-0003"] },
      ENV,
    ),
    ["sk-env-a-0001", "sk-env-b-0002", "sk-stored-0003"],
  );
  assert.deepEqual(configuredKeys({ api_key_env: "UNSET" }, ENV), []);
  assert.deepEqual(configuredKeys({}, ENV), []);
});

test("headers: one set per key, the key in the auth header; none without a key; every key a secret", () => {
  const headers = new UpstreamHeaders(
    { headers: { "x-org": "org-1" }, api_key_env: "KEY_A", api_keys: ["sk-stored-secret-0003"] },
    ENV,
    (key) => ({ "x-api-key": key }),
    { "x-version": "1" },
  );
  assert.equal(headers.keys.size, 2);
  assert.deepEqual(headers.of("sk-stored-secret-0003"), {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "x-version": "1",
    "x-org": "org-1",
    "x-api-key": "sk-stored-secret-0003",
  });
  assert.equal(headers.of(undefined)["x-api-key"], undefined);
  assert.equal(
    redactSecrets("said sk-stored-secret-0003 and sk-env-a-0001"),
    "said [redacted] and [redacted]",
  );
  const keyless = new UpstreamHeaders({ headers: {}, api_key_env: "UNSET" }, ENV, (key) => ({ k: key }));
  assert.equal(keyless.keys.pick(), undefined);
  assert.deepEqual(Object.keys(keyless.of(undefined)), ["content-type", "accept"]);
});

test("what a failure says of its key: a 429 and a refused key are the key's; the rest are not", () => {
  const status = (
    s: number | undefined,
    refused?: "key" | "prompt",
    failure: "status" | "network" = "status",
  ) => new UpstreamError(failure, "x", { status: s, refused });
  assert.equal(keyFault(status(429)), "rate_limited");
  assert.equal(
    keyFault(new UpstreamError("status", "spend limit", { status: 429, retryable: false })),
    "rate_limited",
  );
  assert.equal(keyFault(status(401, "key")), "unauthorized");
  assert.equal(keyFault(status(403, "key")), "forbidden");
  assert.equal(keyFault(status(400, "key")), "key_invalid");
  assert.equal(keyFault(status(400, "prompt")), undefined);
  assert.equal(keyFault(status(500)), undefined);
  assert.equal(keyFault(status(529)), undefined, "overloaded: the upstream's, whatever the key");
  assert.equal(keyFault(status(undefined)), undefined, "an error event in a stream came after the opening");
  assert.equal(keyFault(status(undefined, undefined, "network")), undefined);
  assert.equal(keyFault(new Error("x")), undefined);
});
