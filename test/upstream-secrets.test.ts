// An upstream that quotes the key it was sent (second audit, item 7): with keys of shapes the
// patterns miss (a password, base64 with + and /, a JWT, a dotted token), 8 of 45 error
// answers carried the upstream's key to the client, all on /v1/messages, and the cleaning
// function let 5 of 7 formats through. Now the configured secrets themselves are redacted, in
// their common encodings, wherever an upstream's words go: error answers (JSON and stream
// error events) on every API, records and logs. The upstream here is a small server that
// answers every request with an error quoting its key in those encodings, in Anthropic's or
// OpenAI's envelope.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { ConfigInput } from "../src/config/schema.ts";
import { sanitizeUpstreamMessage } from "../src/providers/sanitize.ts";
import { clearSecrets, registerSecret } from "../src/providers/secrets.ts";
import { startTestGateway, type TestGateway } from "./support/gateway.ts";

const KEYS = {
  PASSWORD_KEY: "hunter2-Correct-Horse!",
  BASE64_KEY: "q8+Zr/Tk9Wm3xY==",
  JWT_KEY: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJnYXRld2F5In0.c2lnbmF0dXJl",
  DOTTED_KEY: "acct.7f3e.prod.key99",
};

/** A key pool's: one from a variable (api_keys_env), one given as it is (api_keys, from the store). */
const POOL = {
  POOL_ENV_KEY: "pool.env.Secret+Key/42",
  STORED_KEY: "stored~Pool~Key~v9!",
};
const EVERY_KEY = { ...KEYS, ...POOL };

/** Every way the upstream quotes a key: as sent, base64, Basic credentials, URL- and JSON-escaped, hex. */
function quotes(key: string): string {
  return [
    `invalid x-api-key ${key}`,
    `token=${Buffer.from(key).toString("base64")}`,
    `Basic ${Buffer.from(`:${key}`).toString("base64")}`,
    `q=${encodeURIComponent(key)}`,
    `json ${JSON.stringify(key).slice(1, -1).replace(/\//g, "\\/")}`,
    `hex ${Buffer.from(key).toString("hex")}`,
  ].join("; ");
}

/** An upstream that answers 400 quoting the key it got, Anthropic's or OpenAI's way. */
function quotingUpstream(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const key = String(
        req.headers["x-api-key"] ?? req.headers.authorization?.replace(/^Bearer /, "") ?? "",
      );
      const anthropic = req.url?.includes("/v1/messages");
      const message = quotes(key);
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          anthropic
            ? { type: "error", error: { type: "invalid_request_error", message } }
            : { error: { message, type: "invalid_request_error", code: null, param: null } },
        ),
      );
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

let upstream: Server;
let gw: TestGateway;
let key: string;

before(async () => {
  upstream = await quotingUpstream();
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const providers: ConfigInput["providers"] = Object.keys(KEYS).flatMap((env) => [
    { id: `a-${env.toLowerCase()}`, type: "anthropic" as const, base_url: base, api_key_env: env },
    {
      id: `o-${env.toLowerCase()}`,
      type: "openai-compatible" as const,
      base_url: `${base}/v1`,
      api_key_env: env,
    },
  ]);
  const pool = {
    api_keys_env: ["POOL_ENV_KEY"],
    api_keys: [POOL.STORED_KEY],
  };
  providers.push(
    { id: "a-pool", type: "anthropic" as const, base_url: base, ...pool },
    { id: "o-pool", type: "openai-compatible" as const, base_url: `${base}/v1`, ...pool },
  );
  const models = providers.map((p) => ({ id: p.id, provider: p.id, upstream_model: "m" }));
  gw = await startTestGateway({
    env: { ...KEYS, POOL_ENV_KEY: POOL.POOL_ENV_KEY },
    config: {
      providers,
      models,
      plans: [{ id: "default", quota_tokens: 1_000_000, models: models.map((m) => m.id) }],
    },
  });
  key = (await gw.key(await gw.account("secrets"))).secret;
});
after(async () => {
  await gw?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

function assertClean(text: string, where: string) {
  for (const [name, secret] of Object.entries(EVERY_KEY))
    for (const form of [
      secret,
      Buffer.from(secret).toString("base64").replace(/=+$/, ""),
      Buffer.from(`:${secret}`).toString("base64").replace(/=+$/, ""),
      encodeURIComponent(secret),
      Buffer.from(secret).toString("hex"),
    ])
      assert.equal(text.includes(form), false, `${where}: ${name} leaked as ${form}`);
}

async function call(path: string, body: Record<string, unknown>) {
  const res = await fetch(`${gw.origin}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), id: res.headers.get("x-request-id")! };
}

describe("an upstream quoting its key, on every API", () => {
  for (const env of Object.keys(KEYS)) {
    const a = `a-${env.toLowerCase()}`;
    const o = `o-${env.toLowerCase()}`;
    const cases: Array<[string, string, Record<string, unknown>]> = [
      [
        "messages JSON (native)",
        "/v1/messages",
        { model: a, max_tokens: 5, messages: [{ role: "user", content: "x" }] },
      ],
      [
        "messages stream (native)",
        "/v1/messages",
        { model: a, max_tokens: 5, stream: true, messages: [{ role: "user", content: "x" }] },
      ],
      [
        "messages JSON (translated)",
        "/v1/messages",
        { model: o, max_tokens: 5, messages: [{ role: "user", content: "x" }] },
      ],
      ["chat completions", "/v1/chat/completions", { model: a, messages: [{ role: "user", content: "x" }] }],
      [
        "chat completions stream",
        "/v1/chat/completions",
        { model: o, stream: true, messages: [{ role: "user", content: "x" }] },
      ],
      ["responses", "/v1/responses", { model: a, input: "x" }],
      ["responses stream", "/v1/responses", { model: o, input: "x", stream: true }],
    ];
    for (const [what, path, body] of cases)
      test(`${env}: ${what}: the answer, the record and the logs hold no form of the key`, async () => {
        const answer = await call(path, body);
        assert.equal(answer.status, 400, answer.text);
        assert.match(answer.text, /\[redacted\]/, "the upstream's words came, redacted");
        assertClean(answer.text, "answer");
        assertClean(JSON.stringify(await gw.record(answer.id)), "record");
        assertClean(gw.logs.join("\n"), "logs");
      });
  }
});

describe("an upstream quoting whichever key of a pool it was sent", () => {
  for (const id of ["a-pool", "o-pool"])
    test(`${id}: each key in turn is quoted, and redacted in the answer, the record and the logs`, async () => {
      const bodies = [
        { model: id, messages: [{ role: "user", content: "x" }] },
        { model: id, stream: true, messages: [{ role: "user", content: "x" }] },
      ];
      for (const body of bodies) {
        const answer = await call("/v1/chat/completions", body);
        assert.equal(answer.status, 400, answer.text);
        assert.match(answer.text, /\[redacted\]/, "the upstream's words came, redacted");
        assertClean(answer.text, "answer");
        assertClean(JSON.stringify(await gw.record(answer.id)), "record");
      }
      assertClean(gw.logs.join("\n"), "logs");
      const states = gw.gateway.deps.registry.model(id)!.provider.keyStates!();
      assert.deepEqual(
        states.map((s) => [s.hint, s.calls]),
        [
          ["…y/42", 1],
          ["…~v9!", 1],
        ],
        "both keys were sent, in turn, and quoted",
      );
      assertClean(JSON.stringify(states), "key states");
    });
});

test("the cleaning function: every configured secret, in each encoding, whatever its shape", () => {
  clearSecrets();
  for (const secret of Object.values(KEYS)) registerSecret(secret);
  for (const secret of Object.values(KEYS)) assertClean(sanitizeUpstreamMessage(quotes(secret)), "sanitized");
  registerSecret("short");
  assert.equal(
    sanitizeUpstreamMessage("a short word"),
    "a short word",
    "values under 8 characters are no secrets",
  );
});
