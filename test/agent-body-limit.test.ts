// The agent APIs' own body limit (`server.agent_body_limit_bytes`, 32 MiB by default): a long
// Claude Code, Codex or Gemini CLI session sends its whole history every turn, past the
// general 1 MiB limit long before Anthropic's own 32 MB. A body over a limit gets 413 in the envelope of
// the route's API, naming the limit and the setting that raises it (Claude Code shows the
// message; an operator reading a log learns what to change). The protection stays: a 40 MB
// body is refused from its content-length before a byte of it is read, and a chunked one as
// soon as it passes the limit, with nothing buffered beyond it.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, describe, test } from "node:test";
import Anthropic, { APIError as AnthropicAPIError } from "@anthropic-ai/sdk";
import { ApiError as GoogleApiError, GoogleGenAI } from "@google/genai";
import OpenAI, { APIError } from "openai";
import { configSchema } from "../src/config/cross-check.ts";
import { startTestGateway, type TestGateway, testConfig } from "./support/gateway.ts";

const MiB = 1024 * 1024;

describe("the agent APIs' body limit", () => {
  test("is at least Anthropic's 32 MB request limit by default, apart from the general limit", () => {
    const server = configSchema.parse(testConfig(undefined, { server: {} })).server;
    assert.ok(server.agent_body_limit_bytes >= 32 * 1_000_000, `${server.agent_body_limit_bytes}`);
    assert.equal(server.agent_body_limit_bytes, 32 * MiB);
    assert.equal(server.body_limit_bytes, MiB, "chat completions keep theirs");
  });
});

describe("bodies over and under the limits (the demo model, no upstream)", () => {
  let gw: TestGateway;
  let key: string;
  /** POSTs to the gateway and collects what it gave back */
  let requests = 0;

  before(async () => {
    // 64 KiB for chat completions (the test config's), 256 KiB for the agent APIs
    gw = await startTestGateway({
      config: { server: { ...testConfig(undefined).server, agent_body_limit_bytes: 256 * 1024 } },
    });
    key = (await gw.key(await gw.account("agents"))).secret;
    gw.gateway.app.server.on("request", () => requests++);
  });
  after(async () => {
    await gw?.close();
  });

  /** a conversation of `bytes` of text, the way an agent resends its history */
  const history = (bytes: number) => [
    { role: "user" as const, content: `${"x".repeat(bytes)} mock:tokens=2` },
    { role: "assistant" as const, content: "Done." },
    { role: "user" as const, content: "Next." },
  ];

  test("a body the agent limit admits and the general limit would not is served on /v1/messages and /v1/responses", async () => {
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.origin, maxRetries: 0 });
    const message = await anthropic.messages.create({
      model: "demo",
      max_tokens: 16,
      messages: history(128 * 1024),
    });
    assert.equal(message.type, "message");
    const openai = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
    const response = await openai.responses.create({ model: "demo", input: history(128 * 1024) });
    assert.equal(response.status, "completed");
    // the same size on chat completions passes its own, smaller limit
    const chat = await openai.chat.completions.create({ model: "demo", messages: history(128 * 1024) }).then(
      () => assert.fail("chat completions keep the general limit"),
      (err: unknown) => err,
    );
    assert.ok(chat instanceof APIError);
    assert.equal(chat.status, 413);
    assert.match(chat.message, /64 KiB \(65536 bytes\).*server\.body_limit_bytes/);
  });

  test("over the agent limit, Anthropic's SDK gets its 413 request_too_large naming the limit and the setting", async () => {
    const before = requests;
    const anthropic = new Anthropic({ apiKey: key, baseURL: gw.origin }); // default retries
    const err = await anthropic.messages
      .create({ model: "demo", max_tokens: 16, messages: history(300 * 1024) })
      .then(
        () => assert.fail("the body is over the limit"),
        (e: unknown) => e,
      );
    assert.ok(err instanceof AnthropicAPIError);
    assert.equal(err.status, 413);
    const body = err.error as { type: string; error: { type: string; message: string; details: unknown } };
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "request_too_large", "Anthropic's type for 413");
    assert.equal(
      body.error.message,
      "The request body is larger than this gateway accepts on /v1/messages: 256 KiB (262144 bytes). " +
        "The gateway's operator can raise it with the setting server.agent_body_limit_bytes.",
    );
    assert.deepEqual(body.error.details, { error_code: "request_too_large" });
    assert.equal(requests - before, 1, "a 413 is not retried");
    // count_tokens takes the same whole conversation
    const counted = await anthropic.messages
      .countTokens({ model: "demo", messages: history(300 * 1024) })
      .then(
        () => assert.fail("over the limit"),
        (e: unknown) => e,
      );
    assert.ok(counted instanceof AnthropicAPIError);
    assert.equal(counted.status, 413);
  });

  test("the Gemini API takes the agent limit too; over it, Google's SDK gets the 413 in Google's envelope", async () => {
    const google = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.origin } });
    const contents = (bytes: number) =>
      history(bytes).map((m) => ({
        role: m.role === "assistant" ? "model" : "user",
        parts: [{ text: m.content }],
      }));
    const answer = await google.models.generateContent({ model: "demo", contents: contents(128 * 1024) });
    assert.ok(answer.text);
    const err = await google.models.generateContent({ model: "demo", contents: contents(300 * 1024) }).then(
      () => assert.fail("the body is over the limit"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof GoogleApiError);
    assert.equal(err.status, 413);
    const { error } = JSON.parse(err.message);
    assert.equal(error.status, "INVALID_ARGUMENT");
    assert.match(error.message, /256 KiB \(262144 bytes\).*server\.agent_body_limit_bytes/);
  });

  test("over the agent limit, the openai SDK gets the 413 on /v1/responses in OpenAI's envelope", async () => {
    const openai = new OpenAI({ apiKey: key, baseURL: gw.baseURL, maxRetries: 0 });
    const err = await openai.responses.create({ model: "demo", input: history(300 * 1024) }).then(
      () => assert.fail("the body is over the limit"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof APIError);
    assert.equal(err.status, 413);
    assert.equal(err.code, "request_too_large");
    assert.equal(err.type, "invalid_request_error");
    assert.match(err.message, /on \/v1\/responses: 256 KiB \(262144 bytes\).*server\.agent_body_limit_bytes/);
  });
});

describe("a 40 MB body at the default 32 MiB limit is refused promptly, not buffered", () => {
  let gw: TestGateway;
  let key: string;
  let port: number;

  before(async () => {
    const { body_limit_bytes: _general, ...server } = testConfig(undefined).server!;
    gw = await startTestGateway({ config: { server } }); // the limits' defaults
    key = (await gw.key(await gw.account("big"))).secret;
    port = Number(new URL(gw.origin).port);
  });
  after(async () => {
    await gw?.close();
  });

  /**
   * POSTs `total` bytes to /v1/messages, `chunked` or with a content-length, writing as fast
   * as the gateway reads; resolves with the status and how much had been written when it came.
   */
  function send(total: number, chunked: boolean) {
    return new Promise<{ status: number; sentWhenAnswered: number; ms: number; body: string }>(
      (resolve, reject) => {
        const started = performance.now();
        let sent = 0;
        let answered = false;
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: "/v1/messages",
            headers: {
              "x-api-key": key,
              "content-type": "application/json",
              ...(chunked ? {} : { "content-length": total }),
            },
          },
          (res) => {
            answered = true;
            const sentWhenAnswered = sent;
            let body = "";
            res.setEncoding("utf8").on("data", (d: string) => {
              body += d;
            });
            res.on("end", () => {
              resolve({
                status: res.statusCode ?? 0,
                sentWhenAnswered,
                ms: performance.now() - started,
                body,
              });
              req.destroy();
            });
          },
        );
        req.on("error", (err) => {
          if (!answered) reject(err);
        });
        const chunk = Buffer.alloc(256 * 1024, " ");
        const pump = () => {
          while (!answered && sent < total) {
            sent += chunk.length;
            if (!req.write(chunk)) return void req.once("drain", pump);
          }
          if (!answered) req.end();
        };
        pump();
      },
    );
  }

  test("with a content-length: 413 before the body is sent", async () => {
    const r = await send(40 * 1_000_000, false);
    assert.equal(r.status, 413, r.body);
    assert.match(JSON.parse(r.body).error.message, /32 MiB \(33554432 bytes\)/);
    assert.ok(r.sentWhenAnswered < 32 * MiB, `answered after ${r.sentWhenAnswered} bytes were written`);
    assert.ok(r.ms < 10_000, `${Math.round(r.ms)} ms`);
  });

  test("chunked: 413 as soon as the body passes the limit, before the rest arrives", async () => {
    const r = await send(40 * 1_000_000, true);
    assert.equal(r.status, 413, r.body);
    assert.equal(JSON.parse(r.body).error.type, "request_too_large");
    assert.ok(r.sentWhenAnswered < 40 * 1_000_000, `answered after ${r.sentWhenAnswered} bytes were written`);
    assert.ok(r.sentWhenAnswered >= 32 * MiB, "not before the limit was reached");
    assert.ok(r.ms < 10_000, `${Math.round(r.ms)} ms`);
  });
});
