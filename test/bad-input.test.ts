// Bad input over raw HTTP: whatever a client sends, the gateway answers with the error
// envelope, a stable status and code, never a 500, and never hangs. fetch for ordinary
// requests; node:net for what fetch cannot send (odd headers, partial bodies, broken HTTP).
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, test } from "node:test";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

/** bound on every exchange: an answer that takes longer counts as a hang */
const CLIENT_TIMEOUT_MS = 10_000;
const BODY_LIMIT = 64 * 1024;
/** the agent APIs' own limit (server.agent_body_limit_bytes), smaller than its default here */
const AGENT_BODY_LIMIT = 128 * 1024;

let upstream: MockUpstream;
let gw: TestGateway;
let secret: string;
let port: number;

before(async () => {
  upstream = await startMockUpstream({ apiKey: "sk-upstream-secret-123" });
  gw = await startTestGateway({
    upstream,
    config: { server: { ...testConfig(upstream).server, agent_body_limit_bytes: AGENT_BODY_LIMIT } },
  });
  secret = (await gw.key(await gw.account("bad-input"))).secret;
  port = Number(new URL(gw.origin).port);
});

after(async () => {
  await gw?.close();
  await upstream?.close();
});

interface Answer {
  status: number;
  /** lower-cased names */
  headers: Record<string, string>;
  body: string;
}

async function viaFetch(path: string, init: RequestInit): Promise<Answer> {
  const res = await fetch(`${gw.origin}${path}`, { ...init, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    headers[k] = v;
  });
  return { status: res.status, headers, body: await res.text() };
}

/** POST /v1/chat/completions with a valid key; body sent byte for byte. */
function post(body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Answer> {
  return viaFetch("/v1/chat/completions", {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", ...headers },
    body,
  });
}

function getModels(authorization: string | undefined): Promise<Answer> {
  return viaFetch("/v1/models", authorization === undefined ? {} : { headers: { authorization } });
}

interface RawAnswer extends Answer {
  /** resolves when the server closes the connection (bounded by the client timeout) */
  closed: Promise<void>;
}

/**
 * Writes `parts` on a fresh TCP connection and reads one HTTP response (1xx skipped), with a
 * Content-Length or chunked body, or up to the close. Rejects if no full answer comes in time.
 */
function exchange(parts: Array<string | Uint8Array>): Promise<RawAnswer> {
  return new Promise<RawAnswer>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let buffer = Buffer.alloc(0);
    let done = false;
    let ended = false;
    const closed = new Promise<void>((res, rej) => {
      const t = setTimeout(() => {
        socket.destroy();
        rej(new Error("the server kept the connection open"));
      }, CLIENT_TIMEOUT_MS);
      t.unref(); // the socket itself keeps the process alive while it is open
      socket.once("close", () => {
        clearTimeout(t);
        res();
      });
    });
    closed.catch(() => {}); // only awaited by tests that care
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      socket.destroy();
      reject(
        new Error(
          `no complete answer within ${CLIENT_TIMEOUT_MS} ms; got ${JSON.stringify(buffer.toString("latin1"))}`,
        ),
      );
    }, CLIENT_TIMEOUT_MS);
    const finish = (answer: Answer) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ ...answer, closed });
    };
    const tryParse = () => {
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end === -1) return;
        const head = buffer.subarray(0, end).toString("latin1").split("\r\n");
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? "")?.[1]);
        assert.ok(status, `a status line: ${head[0]}`);
        const headers: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const colon = line.indexOf(":");
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
        }
        const rest = buffer.subarray(end + 4);
        if (status < 200) {
          buffer = rest; // 100 Continue and friends: the final answer follows
          continue;
        }
        if (headers["content-length"] !== undefined) {
          const length = Number(headers["content-length"]);
          if (rest.length >= length)
            finish({ status, headers, body: rest.subarray(0, length).toString("utf8") });
        } else if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
          let body = "";
          let at = 0;
          for (;;) {
            const lineEnd = rest.indexOf("\r\n", at);
            if (lineEnd === -1) return;
            const size = Number.parseInt(rest.subarray(at, lineEnd).toString("latin1"), 16);
            if (size === 0) {
              finish({ status, headers, body });
              return;
            }
            if (rest.length < lineEnd + 2 + size + 2) return;
            body += rest.subarray(lineEnd + 2, lineEnd + 2 + size).toString("utf8");
            at = lineEnd + 2 + size + 2;
          }
        } else if (ended) finish({ status, headers, body: rest.toString("utf8") });
        return;
      }
    };
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      tryParse();
    });
    socket.on("end", () => {
      ended = true;
      tryParse();
      if (!done) {
        done = true;
        clearTimeout(timer);
        reject(
          new Error(
            `the connection ended without a full answer: ${JSON.stringify(buffer.toString("latin1"))}`,
          ),
        );
      }
    });
    socket.on("error", (err) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(err);
    });
    socket.on("connect", () => {
      for (const p of parts) socket.write(p);
    });
  });
}

/** A raw request: request line, headers (in order, duplicates allowed), optional body. */
function rawRequest(
  requestLine: string,
  headers: Array<[string, string | Uint8Array]>,
  body: string | Uint8Array = "",
): Uint8Array {
  const bytes: Uint8Array[] = [Buffer.from(`${requestLine}\r\n`, "latin1")];
  for (const [name, value] of headers) {
    bytes.push(
      Buffer.from(`${name}: `, "latin1"),
      typeof value === "string" ? Buffer.from(value, "latin1") : value,
    );
    bytes.push(Buffer.from("\r\n"));
  }
  bytes.push(Buffer.from("\r\n"), typeof body === "string" ? Buffer.from(body, "utf8") : body);
  return Buffer.concat(bytes);
}

interface ErrorEnvelope {
  error: { message: string; type: string; param: string | null; code: string };
}

/** The answer is the JSON error envelope with this status and code (and param, if given). */
function assertEnvelope(
  answer: Answer,
  status: number,
  code: string,
  options: { param?: string | null; what?: string } = {},
): ErrorEnvelope {
  const what = options.what ? `${options.what}: ` : "";
  assert.notEqual(answer.status, 500, `${what}never a 500: ${answer.body}`);
  assert.equal(answer.status, status, `${what}status (body ${answer.body})`);
  assert.match(answer.headers["content-type"] ?? "", /^application\/json/, `${what}a JSON answer`);
  let body: ErrorEnvelope;
  try {
    body = JSON.parse(answer.body) as ErrorEnvelope;
  } catch {
    assert.fail(`${what}the body is not JSON: ${JSON.stringify(answer.body)}`);
  }
  assert.deepEqual(Object.keys(body), ["error"], `${what}the envelope: ${answer.body}`);
  assert.equal(typeof body.error.message, "string", `${what}error.message`);
  assert.ok(body.error.message.length > 0, `${what}error.message is not empty`);
  assert.equal(typeof body.error.type, "string", `${what}error.type`);
  assert.ok("param" in body.error, `${what}error.param is present`);
  assert.equal(body.error.code, code, `${what}error.code (body ${answer.body})`);
  if (options.param !== undefined) assert.equal(body.error.param, options.param, `${what}error.param`);
  return body;
}

const user = (content: unknown) => [{ role: "user", content }];
const valid = (extra: Record<string, unknown> = {}) => ({
  model: TEST_MODEL,
  messages: user("hi"),
  ...extra,
});

describe("bodies that are not a chat request", () => {
  const cases: Array<[name: string, body: string, code: string]> = [
    ["malformed JSON", '{"model": "gpt-test", "messages": [', "invalid_json"],
    ["JSON with a trailing comma", '{"model":"gpt-test",}', "invalid_json"],
    ["a JSON array", "[]", "invalid_request"],
    ["a JSON string", '"hello"', "invalid_request"],
    ["JSON null", "null", "invalid_request"],
    ["a JSON number", "42", "invalid_request"],
    ["an empty body", "", "invalid_json"],
  ];
  for (const [name, body, code] of cases) {
    test(`${name} -> 400 ${code}`, async () => {
      const before = upstream.requests.length;
      const answer = await post(body);
      assertEnvelope(answer, 400, code);
      assert.ok(answer.headers["x-request-id"], "x-request-id on the refusal");
      assert.equal(upstream.requests.length, before, "nothing forwarded");
    });
  }

  test("an empty body with content-type json over a raw socket -> 400 invalid_json", async () => {
    const answer = await exchange([
      rawRequest("POST /v1/chat/completions HTTP/1.1", [
        ["host", "localhost"],
        ["authorization", `Bearer ${secret}`],
        ["content-type", "application/json"],
        ["content-length", "0"],
        ["connection", "close"],
      ]),
    ]);
    assertEnvelope(answer, 400, "invalid_json");
  });

  const invalidUtf8: Array<[name: string, bytes: number[]]> = [
    ["0xFF 0xFE", [0xff, 0xfe]],
    ["an overlong '/' (C0 AF)", [0xc0, 0xaf]],
    ["a UTF-8 encoded surrogate (ED A0 80)", [0xed, 0xa0, 0x80]],
    ["a truncated sequence (E2 82)", [0xe2, 0x82]],
    ["a lone continuation byte (80)", [0x80]],
  ];
  for (const [name, bytes] of invalidUtf8) {
    test(`invalid UTF-8 inside a JSON string: ${name} -> 400 invalid_json`, async () => {
      const body = Buffer.concat([
        Buffer.from(`{"model":"${TEST_MODEL}","messages":[{"role":"user","content":"bad `),
        Buffer.from(bytes),
        Buffer.from(' bytes"}]}'),
      ]);
      const before = upstream.requests.length;
      assertEnvelope(await post(body), 400, "invalid_json");
      assert.equal(upstream.requests.length, before, "nothing forwarded");
    });
  }
});

describe("validation names the parameter", () => {
  const cases: Array<[name: string, body: Record<string, unknown>, param: string]> = [
    ["missing model", { messages: user("hi") }, "model"],
    ["model that is a number", { model: 5, messages: user("hi") }, "model"],
    ["empty model", { model: "", messages: user("hi") }, "model"],
    ["missing messages", { model: TEST_MODEL }, "messages"],
    ["messages that is a string", { model: TEST_MODEL, messages: "hi" }, "messages"],
    ["empty messages", { model: TEST_MODEL, messages: [] }, "messages"],
    ["a message without role", { model: TEST_MODEL, messages: [{ content: "hi" }] }, "messages[0].role"],
    ["a bad role", { model: TEST_MODEL, messages: [{ role: "wizard", content: "hi" }] }, "messages[0].role"],
    [
      "a bad role in the second message",
      {
        model: TEST_MODEL,
        messages: [
          { role: "user", content: "hi" },
          { role: 7, content: "x" },
        ],
      },
      "messages[1].role",
    ],
    ["content that is a number", { model: TEST_MODEL, messages: user(42) }, "messages[0].content"],
    [
      "content that is an object",
      { model: TEST_MODEL, messages: user({ text: "hi" }) },
      "messages[0].content",
    ],
    ["content that is an empty array", { model: TEST_MODEL, messages: user([]) }, "messages[0].content"],
    [
      "a tool message without tool_call_id",
      { model: TEST_MODEL, messages: [...user("hi"), { role: "tool", content: "x" }] },
      "messages[1].tool_call_id",
    ],
    ['stream: "yes"', valid({ stream: "yes" }), "stream"],
    ["temperature 3", valid({ temperature: 3 }), "temperature"],
    ['temperature "hot"', valid({ temperature: "hot" }), "temperature"],
    ["top_p 1.5", valid({ top_p: 1.5 }), "top_p"],
    ["max_tokens 0", valid({ max_tokens: 0 }), "max_tokens"],
    ["max_tokens -1", valid({ max_tokens: -1 }), "max_tokens"],
    ["max_tokens 1.5", valid({ max_tokens: 1.5 }), "max_tokens"],
    ['max_tokens "10"', valid({ max_tokens: "10" }), "max_tokens"],
    ["max_tokens 1e300", valid({ max_tokens: 1e300 }), "max_tokens"],
    ["n 0", valid({ n: 0 }), "n"],
    ["stop with 5 strings", valid({ stop: ["a", "b", "c", "d", "e"] }), "stop"],
    ["stream_options without stream", valid({ stream_options: { include_usage: true } }), "stream_options"],
    [
      'stream_options.include_usage "yes"',
      valid({ stream: true, stream_options: { include_usage: "yes" } }),
      "stream_options.include_usage",
    ],
    ["tools that is not an array", valid({ tools: { type: "function" } }), "tools"],
  ];
  for (const [name, body, param] of cases) {
    test(`${name} -> 400 invalid_request, param ${param}`, async () => {
      const before = upstream.requests.length;
      const answer = await post(JSON.stringify(body));
      const envelope = assertEnvelope(answer, 400, "invalid_request", { param });
      assert.equal(envelope.error.type, "invalid_request_error");
      assert.equal(upstream.requests.length, before, "nothing forwarded");
    });
  }

  test("null counts as not given (stream: null, stream_options: null) -> 200", async () => {
    const answer = await post(
      JSON.stringify(valid({ stream: null, stream_options: null, temperature: null })),
    );
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).object, "chat.completion");
  });
});

// Model names a client makes up are bounded (findings of the outside audit, issue #17): a huge
// or malformed one is refused before it is looked up, echoed or stored, and unknown ones,
// however many, share one daily aggregate row instead of adding one each.
describe("model names", () => {
  // a gateway of its own: the huge name needs a body limit far over this file's
  let own: TestGateway;
  let ownSecret: string;
  before(async () => {
    own = await startTestGateway({
      upstream,
      config: { server: { ...testConfig(upstream).server, body_limit_bytes: 4 * 1024 * 1024 } },
    });
    ownSecret = (await own.key(await own.account("model-names"))).secret;
  });
  after(async () => {
    await own?.close();
  });

  const chat = (body: unknown, key = ownSecret) =>
    fetch(`${own.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  test("a huge model name is refused with 400 naming `model`, and not echoed", async () => {
    const res = await chat({ model: "m".repeat(900_000), messages: [{ role: "user", content: "hi" }] });
    const text = await res.text();
    assert.equal(res.status, 400);
    const { error } = JSON.parse(text);
    assert.equal(error.param, "model");
    assert.equal(error.code, "invalid_request");
    assert.ok(text.length < 1_000, "the answer does not carry the name");
    const rec = await own.record(res.headers.get("x-request-id")!);
    assert.equal(rec.public_model, null, "the record does not store it either");
  });

  test("names outside the id format are refused the same way", async () => {
    for (const model of ["gpt 4o", "../etc", "m\u0000x", "模型"]) {
      const res = await chat({ model, messages: [{ role: "user", content: "hi" }] });
      assert.equal(res.status, 400, model);
      assert.equal(((await res.json()) as { error: { param: string } }).error.param, "model");
    }
  });

  test("unknown models are recorded, but share one daily aggregate row", async () => {
    const account = await own.account("unknown-models");
    const key = await own.key(account);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await chat(
        { model: `no-such-model-${i}`, messages: [{ role: "user", content: "hi" }] },
        key.secret,
      );
      assert.equal(res.status, 404);
      ids.push(res.headers.get("x-request-id")!);
    }
    assert.equal((await own.record(ids[7]!)).public_model, "no-such-model-7");
    const db = own.gateway.deps.store.db;
    await own.gateway.deps.records.flush();
    const rows = await db.selectFrom("daily_usage").selectAll().where("account_id", "=", account).execute();
    assert.equal(rows.length, 1, "one row for every unknown model together");
    assert.equal(rows[0]!.model, "");
    assert.equal(Number(rows[0]!.calls), 20);
  });
});

describe("deeply nested JSON", () => {
  // ~40 KB, under the body limit: 20,000 levels of arrays. Valid JSON and within the limit,
  // so it must be refused as a bad request (or accepted), never crash the gateway (a 500)
  // or be blamed on the upstream (a 502).
  const DEPTH = 20_000;
  const deep = `${"[".repeat(DEPTH)}${"]".repeat(DEPTH)}`;
  const cases: Array<[name: string, body: string]> = [
    [
      "in a tool's parameters",
      `{"model":"${TEST_MODEL}","messages":[{"role":"user","content":"hi"}],` +
        `"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`,
    ],
    [
      "in an assistant message's tool_calls",
      `{"model":"${TEST_MODEL}","messages":[{"role":"assistant","content":null,"tool_calls":` +
        `[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"},"extra":${deep}}]},` +
        `{"role":"user","content":"hi"}]}`,
    ],
    [
      "in a forwarded object (web_search_options)",
      `{"model":"${TEST_MODEL}","messages":[{"role":"user","content":"hi"}],"web_search_options":{"x":${deep}}}`,
    ],
  ];
  for (const [name, body] of cases) {
    test(`${name} -> 400, not 500 or 502`, async () => {
      assert.ok(Buffer.byteLength(body) < BODY_LIMIT);
      const answer = await post(body);
      assert.notEqual(answer.status, 500, `a client's JSON crashed the gateway: ${answer.body}`);
      assert.notEqual(answer.status, 502, `a client's JSON was blamed on the upstream: ${answer.body}`);
      assert.equal(answer.status, 400, answer.body);
      const code = (JSON.parse(answer.body) as ErrorEnvelope).error.code;
      assert.ok(["invalid_request", "invalid_json"].includes(code), `code ${code}`);
      assertEnvelope(answer, 400, code);
    });
  }
});

describe("content that looks special", () => {
  test("<|endoftext|> and other special-token text is plain text (demo model) -> 200", async () => {
    const content = "before <|endoftext|> middle <|im_start|>system<|im_end|> after";
    const answer = await post(JSON.stringify({ model: "demo", messages: user(content) }));
    assert.equal(answer.status, 200, answer.body);
    const json = JSON.parse(answer.body);
    assert.ok(
      json.choices[0].message.content.includes("<|endoftext|>"),
      "the demo echoes the text as it was",
    );
    assert.ok(json.usage.prompt_tokens > 0);
  });

  test("<|endoftext|> is forwarded to an upstream verbatim -> 200", async () => {
    const content = "x <|endoftext|> y";
    upstream.reset();
    const answer = await post(JSON.stringify({ model: TEST_MODEL, messages: user(content) }));
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(upstream.requests[0]?.body.messages, user(content));
  });
});

describe("content types", () => {
  const types = ["text/plain", "application/x-www-form-urlencoded", "application/xml", "application/jsonx"];
  for (const type of types) {
    test(`${type} -> 415 unsupported_media_type`, async () => {
      assertEnvelope(
        await post(JSON.stringify(valid()), { "content-type": type }),
        415,
        "unsupported_media_type",
      );
    });
  }

  test("no content type with a body -> 415 unsupported_media_type", async () => {
    const body = JSON.stringify(valid());
    const answer = await exchange([
      rawRequest(
        "POST /v1/chat/completions HTTP/1.1",
        [
          ["host", "localhost"],
          ["authorization", `Bearer ${secret}`],
          ["content-length", String(Buffer.byteLength(body))],
          ["connection", "close"],
        ],
        body,
      ),
    ]);
    assertEnvelope(answer, 415, "unsupported_media_type");
  });

  test("application/json with parameters and in capitals is JSON -> 200", async () => {
    for (const type of ["application/json; charset=utf-8", "Application/JSON"]) {
      const answer = await post(JSON.stringify(valid()), { "content-type": type });
      assert.equal(answer.status, 200, `${type}: ${answer.body}`);
    }
  });
});

describe("body size", () => {
  test("exactly the limit is accepted; one byte more -> 413 request_too_large", async () => {
    const json = JSON.stringify(valid());
    const padded = (size: number) => json + " ".repeat(size - Buffer.byteLength(json));
    const atLimit = await post(padded(BODY_LIMIT));
    assert.equal(atLimit.status, 200, atLimit.body);
    assertEnvelope(await post(padded(BODY_LIMIT + 1)), 413, "request_too_large");
  });

  test("a 10 MB content-length is refused before the body is read", async () => {
    // Only a few bytes of the announced 10 MB are sent; the answer must come anyway.
    const answer = await exchange([
      rawRequest(
        "POST /v1/chat/completions HTTP/1.1",
        [
          ["host", "localhost"],
          ["authorization", `Bearer ${secret}`],
          ["content-type", "application/json"],
          ["content-length", String(10 * 1024 * 1024)],
        ],
        `{"model":"${TEST_MODEL}","messages":[`,
      ),
    ]);
    assertEnvelope(answer, 413, "request_too_large");
    // the rest of the body is awaited for `server.body_discard_ms`, then the connection is closed
    await answer.closed;
  });

  test("a chunked body over the limit -> 413, without the client finishing it", async () => {
    const chunk = `2000\r\n${"a".repeat(0x2000)}\r\n`;
    const answer = await exchange([
      rawRequest("POST /v1/chat/completions HTTP/1.1", [
        ["host", "localhost"],
        ["authorization", `Bearer ${secret}`],
        ["content-type", "application/json"],
        ["transfer-encoding", "chunked"],
      ]),
      // 10 chunks of 8 KiB = 80 KiB, and no terminating 0-chunk
      ...Array.from({ length: 10 }, () => chunk),
    ]);
    assertEnvelope(answer, 413, "request_too_large");
    await answer.closed;
  });
});

describe("Authorization headers", () => {
  const refusals: Array<[name: string, header: string | undefined, code: string]> = [
    ["none", undefined, "missing_api_key"],
    ["empty", "", "missing_api_key"],
    ["Bearer with nothing", "Bearer", "missing_api_key"],
    ["Bearer and spaces", "Bearer    ", "missing_api_key"],
    ["Basic credentials", "Basic dXNlcjpwYXNz", "missing_api_key"],
    ["a key without a scheme", "<key>", "missing_api_key"],
    ["an unknown key", `Bearer sk-${"A".repeat(43)}`, "invalid_api_key"],
    ["a 10 KB token", `Bearer sk-${"a".repeat(10 * 1024)}`, "invalid_api_key"],
    ["the key in quotes", 'Bearer "<key>"', "invalid_api_key"],
    ["a token with a quote inside", 'Bearer sk-abc"def', "invalid_api_key"],
  ];
  for (const [name, header, code] of refusals) {
    test(`${name} -> 401 ${code}`, async () => {
      const answer = await getModels(header?.replace("<key>", secret));
      const envelope = assertEnvelope(answer, 401, code);
      assert.equal(envelope.error.type, "authentication_error");
      assert.ok(!answer.body.includes(secret), "the key is not echoed");
    });
  }

  test("the scheme is case-insensitive: bearer / BEARER -> 200", async () => {
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      const answer = await getModels(`${scheme} ${secret}`);
      assert.equal(answer.status, 200, `${scheme}: ${answer.body}`);
      assert.equal(JSON.parse(answer.body).object, "list");
    }
    const chat = await post(JSON.stringify(valid()), { authorization: `bearer ${secret}` });
    assert.equal(chat.status, 200, chat.body);
  });

  test("non-ASCII (latin1) bytes in the token -> 401 invalid_api_key", async () => {
    for (const token of [
      Buffer.concat([Buffer.from("Bearer sk-"), Buffer.from([0xe9, 0xe8, 0xff])]),
      Buffer.concat([Buffer.from(`Bearer ${secret}`), Buffer.from([0xe9])]),
    ]) {
      const answer = await exchange([
        rawRequest("GET /v1/models HTTP/1.1", [
          ["host", "localhost"],
          ["authorization", token],
          ["connection", "close"],
        ]),
      ]);
      assertEnvelope(answer, 401, "invalid_api_key");
    }
  });

  test("two Authorization headers are refused (401), whichever comes first", async () => {
    // Which key pays must not depend on header order: Node keeps only the first
    // Authorization line, so an ambiguous request has to be refused explicitly.
    for (const order of [
      [`Bearer ${secret}`, `Bearer sk-${"B".repeat(43)}`],
      [`Bearer sk-${"B".repeat(43)}`, `Bearer ${secret}`],
    ]) {
      const answer = await exchange([
        rawRequest("GET /v1/models HTTP/1.1", [
          ["host", "localhost"],
          ["authorization", order[0]!],
          ["authorization", order[1]!],
          ["connection", "close"],
        ]),
      ]);
      const shown = order.map((h) => h.replace(secret, "<the valid key>")).join(" / ");
      assert.equal(answer.status, 401, `headers in this order: ${shown} answered ${answer.body}`);
      const code = (JSON.parse(answer.body) as ErrorEnvelope).error.code;
      assert.ok(["missing_api_key", "invalid_api_key"].includes(code), `code ${code}`);
      assertEnvelope(answer, 401, code);
    }
  });
});

describe("routes and methods", () => {
  const cases: Array<[method: string, path: string, withKey: boolean]> = [
    ["GET", "/v1/nothing", false],
    ["GET", "/v1/nothing", true],
    ["POST", "/nope", false],
    ["GET", "/", false],
    ["GET", "/v1/chat/completions", true],
    ["GET", "/v1/chat/completions", false],
    ["PUT", "/v1/chat/completions", true],
    ["DELETE", "/v1/models", true],
    ["POST", "/v1/models", true],
  ];
  for (const [method, path, withKey] of cases) {
    test(`${method} ${path}${withKey ? " (with a key)" : ""} -> 404 http_error`, async () => {
      const answer = await viaFetch(path, {
        method,
        headers: withKey ? { authorization: `Bearer ${secret}` } : {},
      });
      const envelope = assertEnvelope(answer, 404, "http_error");
      assert.equal(envelope.error.type, "dev_gateway_error");
      assert.ok(answer.headers["x-request-id"]);
    });
  }

  test("a path with broken percent-encoding -> the envelope, code http_error", async () => {
    for (const path of ["/v1/models%", "/v1/chat/completions%ZZ", "/v1/%E0%A4%A"]) {
      const answer = await exchange([
        rawRequest(`GET ${path} HTTP/1.1`, [
          ["host", "localhost"],
          ["connection", "close"],
        ]),
      ]);
      assert.ok([400, 404].includes(answer.status), `${path}: status ${answer.status}`);
      assertEnvelope(answer, answer.status, "http_error", { what: path });
    }
  });
});

describe("broken HTTP (raw sockets)", () => {
  test("a header block over 16 KB -> 431 envelope", async () => {
    const answer = await exchange([
      rawRequest("GET /v1/models HTTP/1.1", [
        ["host", "localhost"],
        ["authorization", `Bearer ${secret}`],
        ["x-padding", "a".repeat(20 * 1024)],
      ]),
    ]);
    const envelope = assertEnvelope(answer, 431, "http_error");
    assert.equal(envelope.error.type, "dev_gateway_error");
    await answer.closed;
  });

  test("an Authorization header over 16 KB -> 431 envelope", async () => {
    const answer = await exchange([
      rawRequest("GET /v1/models HTTP/1.1", [
        ["host", "localhost"],
        ["authorization", `Bearer sk-${"a".repeat(20 * 1024)}`],
      ]),
    ]);
    assertEnvelope(answer, 431, "http_error");
  });

  const malformed: Array<[name: string, bytes: string]> = [
    ["a garbage request line", "GARBAGE\r\n\r\n"],
    ["binary noise", "\u0000\u0001\u0002\u0003 nonsense \u00ff\r\n\r\n"],
    ["an HTTP/2 preface on an HTTP/1 port", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
    ["a header line without a colon", "GET /v1/models HTTP/1.1\r\nhost: localhost\r\nnot a header\r\n\r\n"],
    [
      "Content-Length and Transfer-Encoding together",
      "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n" +
        "content-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    ],
    [
      "a non-numeric Content-Length",
      "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-length: abc\r\n\r\n",
    ],
  ];
  for (const [name, bytes] of malformed) {
    test(`${name} -> 400 envelope`, async () => {
      const answer = await exchange([Buffer.from(bytes, "latin1")]);
      const envelope = assertEnvelope(answer, 400, "http_error");
      assert.equal(envelope.error.type, "dev_gateway_error");
      await answer.closed;
    });
  }

  test("an HTTP/1.1 request without Host -> 400 envelope", async () => {
    const answer = await exchange([
      rawRequest("GET /v1/models HTTP/1.1", [
        ["authorization", `Bearer ${secret}`],
        ["connection", "close"],
      ]),
    ]);
    assertEnvelope(answer, 400, "http_error");
  });
});

describe("POST /v1/messages: bad input in Anthropic's envelope, recorded, never a 500", () => {
  /** POST /v1/messages with a valid x-api-key; body sent byte for byte. */
  const postMessages = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
    viaFetch("/v1/messages", {
      method: "POST",
      headers: { "x-api-key": secret, "content-type": "application/json", ...headers },
      body,
    });

  /** Anthropic's error body with this status, type and (catalog) code; the call's record says messages. */
  async function assertAnthropic(answer: Answer, status: number, type: string, code: string, what: string) {
    assert.notEqual(answer.status, 500, `${what}: never a 500: ${answer.body}`);
    assert.equal(answer.status, status, `${what}: status (body ${answer.body})`);
    assert.match(answer.headers["content-type"] ?? "", /^application\/json/, `${what}: a JSON answer`);
    const body = JSON.parse(answer.body);
    assert.deepEqual(Object.keys(body), ["type", "error"], `${what}: the envelope: ${answer.body}`);
    assert.equal(body.type, "error");
    assert.equal(body.error.type, type, `${what}: error.type`);
    assert.ok(body.error.message.length > 0, `${what}: a message`);
    assert.equal(body.error.details.error_code, code, `${what}: details.error_code`);
    const row = await gw.record(answer.headers["request-id"]!);
    assert.equal(row.api, "messages", `${what}: recorded as a messages call`);
    assert.equal(Number(row.http_status), status);
    return body.error.message as string;
  }

  const ask = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({ model: TEST_MODEL, max_tokens: 16, messages: user("hi"), ...extra });
  const block = (b: unknown) => ask({ messages: user([b]) });
  const cases: Array<[name: string, body: string, message: RegExp, code?: string]> = [
    ["malformed JSON", '{"model": "gpt-test", "messages": [', /not valid JSON/, "invalid_json"],
    ["an empty body", "", /empty/, "invalid_json"],
    ["a JSON array", "[]", /must be a JSON object/],
    ["JSON null", "null", /must be a JSON object/],
    [
      "no max_tokens",
      JSON.stringify({ model: TEST_MODEL, messages: user("hi") }),
      /^max_tokens: Field required$/,
    ],
    ["max_tokens 0", ask({ max_tokens: 0 }), /^max_tokens: /],
    ["max_tokens a string", ask({ max_tokens: "16" }), /^max_tokens: .*expected number/],
    ["max_tokens a fraction", ask({ max_tokens: 1.5 }), /^max_tokens: .*expected int,/],
    ["no model", JSON.stringify({ max_tokens: 16, messages: user("hi") }), /^model: Field required$/],
    ["a long model id", ask({ model: "m".repeat(1_000) }), /^model: must be at most/],
    ["messages empty", ask({ messages: [] }), /^messages: /],
    ["messages an object", ask({ messages: { role: "user" } }), /^messages: .*expected array/],
    ["a role of no kind", ask({ messages: [{ role: "robot", content: "x" }] }), /^messages\.0\.role: /],
    ["content a number", ask({ messages: user(42) }), /^messages\.0\.content: /],
    ["an empty block list", ask({ messages: user([]) }), /^messages\.0\.content: /],
    ["a block without a type", block({ text: "x" }), /^messages\.0\.content\.0\.type: /],
    ["a text block without text", block({ type: "text" }), /^messages\.0\.content\.0\.text: Field required$/],
    ["an empty text block", block({ type: "text", text: "" }), /^messages\.0\.content\.0\.text: /],
    [
      "an image of another type",
      block({ type: "image", source: { type: "base64", media_type: "image/bmp", data: "AA==" } }),
      /^messages\.0\.content\.0\.source\.media_type: /,
    ],
    [
      "an image URL that is not http",
      block({ type: "image", source: { type: "url", url: "file:///etc/passwd" } }),
      /^The URL at messages\[0\]\.content\[0\]\.source\.url must be an https: or data: URL\.$/,
    ],
    [
      "tool_use input not an object",
      ask({
        messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "n", input: [1] }] }],
      }),
      /^messages\.0\.content\.0\.input: /,
    ],
    [
      "a thinking block in a user turn",
      block({ type: "thinking", thinking: "x", signature: "s" }),
      /belongs to an assistant turn/,
    ],
    ["stream a string", ask({ stream: "yes" }), /^stream: .*expected boolean/],
    ["temperature 2", ask({ temperature: 2 }), /^temperature: /],
    ["metadata.user_id a number", ask({ metadata: { user_id: 7 } }), /^metadata\.user_id: /],
    [
      "a cache_control without a type",
      block({ type: "text", text: "x", cache_control: {} }),
      /^messages\.0\.content\.0\.cache_control\.type: Field required$/,
    ],
    ["a tool without a schema", ask({ tools: [{ name: "t" }] }), /^tools\.0\.input_schema: Field required$/],
    ["a tool type that is not a string", ask({ tools: [{ type: 7, name: "bash" }] }), /^tools\.0\.type: /],
    ["tool_choice of another type", ask({ tool_choice: { type: "some" } }), /^tool_choice\.type: /],
    [
      "a thinking budget under 1024",
      ask({ thinking: { type: "enabled", budget_tokens: 10 } }),
      /^thinking\.budget_tokens: /,
    ],
  ];
  for (const [name, body, message, code] of cases)
    test(`${name} -> 400 invalid_request_error`, async () => {
      const before = upstream.requests.length;
      const answer = await postMessages(body);
      assert.match(
        await assertAnthropic(answer, 400, "invalid_request_error", code ?? "invalid_request", name),
        message,
      );
      assert.equal(upstream.requests.length, before, "nothing forwarded");
    });

  test("a body over the agent limit -> 413, in Anthropic's envelope with its type request_too_large", async () => {
    const json = ask();
    const pad = (size: number) => json + " ".repeat(size - Buffer.byteLength(json));
    // over the general limit, within the agent APIs' own
    assert.notEqual((await postMessages(pad(BODY_LIMIT + 1))).status, 413);
    const answer = await postMessages(pad(AGENT_BODY_LIMIT + 1));
    await assertAnthropic(answer, 413, "request_too_large", "request_too_large", "over the limit");
  });

  test("deeply nested JSON and another content type are refused the same way", async () => {
    const deep = `${"[".repeat(200)}${"]".repeat(200)}`;
    await assertAnthropic(
      await postMessages(ask({ metadata: deep })),
      400,
      "invalid_request_error",
      "invalid_request",
      "nested string",
    );
    await assertAnthropic(
      await postMessages(`{"model":"x","max_tokens":1,"messages":${deep}}`),
      400,
      "invalid_request_error",
      "invalid_json",
      "nested",
    );
    await assertAnthropic(
      await postMessages(ask(), { "content-type": "text/plain" }),
      415,
      "invalid_request_error",
      "unsupported_media_type",
      "text/plain",
    );
  });

  test("no key, an unknown key, a key in the wrong header -> 401 authentication_error", async () => {
    const noKey = await viaFetch("/v1/messages", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: ask(),
    });
    assert.match(
      await assertAnthropic(noKey, 401, "authentication_error", "missing_api_key", "no key"),
      /x-api-key/,
    );
    await assertAnthropic(
      await postMessages(ask(), { "x-api-key": "sk-nope0123456789" }),
      401,
      "authentication_error",
      "invalid_api_key",
      "unknown key",
    );
    await assertAnthropic(
      await postMessages(ask(), { "x-api-key": "not a key at all \u00e9" }),
      401,
      "authentication_error",
      "invalid_api_key",
      "not a key",
    );
  });

  test("count_tokens: the same validation, without max_tokens; its errors in the same envelope", async () => {
    const count = (body: string) =>
      viaFetch("/v1/messages/count_tokens", {
        method: "POST",
        headers: { "x-api-key": secret, "content-type": "application/json" },
        body,
      });
    const ok = await count(JSON.stringify({ model: TEST_MODEL, messages: user("hi there") }));
    assert.equal(ok.status, 200, ok.body);
    assert.ok(JSON.parse(ok.body).input_tokens > 0);
    for (const [body, status, code] of [
      [JSON.stringify({ model: TEST_MODEL, messages: [] }), 400, "invalid_request"],
      [JSON.stringify({ model: "no-such-model", messages: user("x") }), 404, "model_not_found"],
      ["{", 400, "invalid_json"],
    ] as const) {
      const answer = await count(body);
      assert.equal(answer.status, status, answer.body);
      assert.equal(JSON.parse(answer.body).error.details.error_code, code);
    }
  });
});

describe("the Responses API's bodies and ids", () => {
  const postResponses = (body: string) =>
    viaFetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body,
    });
  const cases: Array<[name: string, body: string, code: string, param?: string | null]> = [
    ["malformed JSON", '{"model": "gpt-test", "input": [', "invalid_json"],
    ["a JSON array", "[]", "invalid_request", null],
    ["JSON null", "null", "invalid_request", null],
    ["no input", `{"model":"${TEST_MODEL}"}`, "invalid_request", "input"],
    ["input of the wrong type", `{"model":"${TEST_MODEL}","input":{"a":1}}`, "invalid_request", "input"],
    [
      // an item of a type the gateway does not know goes natively; translated, nothing is left
      "only an item of no known type",
      `{"model":"${TEST_MODEL}","input":[{"type":"x"}]}`,
      "invalid_request",
      "input",
    ],
    [
      "an item of an empty type",
      `{"model":"${TEST_MODEL}","input":[{"type":""}]}`,
      "invalid_request",
      "input[0].type",
    ],
    ["an item that is a number", `{"model":"${TEST_MODEL}","input":[7]}`, "invalid_request", "input[0]"],
    [
      "a function_call without its call_id",
      `{"model":"${TEST_MODEL}","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`,
      "invalid_request",
      "input[0].call_id",
    ],
    [
      "a tool without a type",
      `{"model":"${TEST_MODEL}","input":"x","tools":[{}]}`,
      "invalid_request",
      "tools[0].type",
    ],
    [
      "metadata of numbers",
      `{"model":"${TEST_MODEL}","input":"x","metadata":{"a":1}}`,
      "invalid_request",
      "metadata.a",
    ],
    [
      "a tool's parameters nested 20,000 deep",
      `{"model":"${TEST_MODEL}","input":"x","tools":[{"type":"function","name":"f","parameters":{"a":${"[".repeat(20_000)}${"]".repeat(20_000)}}}]}`,
      "invalid_json",
    ],
  ];
  for (const [name, body, code, param] of cases) {
    test(`${name} -> 400 ${code}, nothing forwarded`, async () => {
      const before = upstream.requests.length;
      const answer = await postResponses(body);
      assert.notEqual(answer.status, 500, answer.body);
      const envelope = assertEnvelope(answer, 400, code, param === undefined ? {} : { param });
      assert.ok(envelope.error.message);
      assert.equal(upstream.requests.length, before, "nothing forwarded");
    });
  }

  test("an id longer than a path parameter may be is refused in the envelope", async () => {
    const answer = await viaFetch(`/v1/responses/${"x".repeat(2_000)}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    assertEnvelope(answer, 400, "http_error");
  });

  test("ids that name nothing, however odd, are 404 response_not_found", async () => {
    const headers = { authorization: `Bearer ${secret}` };
    for (const id of ["resp_nope", "x".repeat(90), "%E2%82%AC%00", "resp_%27%20OR%201%3D1"]) {
      assertEnvelope(await viaFetch(`/v1/responses/${id}`, { headers }), 404, "response_not_found", {
        what: id,
      });
      assertEnvelope(
        await viaFetch(`/v1/responses/${id}`, { method: "DELETE", headers }),
        404,
        "response_not_found",
        {
          what: id,
        },
      );
    }
  });
});

describe("the gateway survived all of the above", () => {
  test("a normal call still works and nothing above crashed it", async () => {
    const answer = await post(
      JSON.stringify({ model: TEST_MODEL, messages: user("still alive? mock:tokens=2") }),
    );
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).choices[0].message.content, "Hello world");
  });
});
