import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import type { Logger } from "pino";
import { createLogger } from "./logger.ts";
import { type LoggedCall, requestLine, requestLogger } from "./request-logger.ts";

/** A pino logger writing to an array, and how many children were made of it. */
function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const parent: Logger = createLogger(level, sink);
  const counted = { children: 0 };
  // pino's children inherit from their parent, this spy included: it must call on `this`
  const child = parent.child;
  parent.child = function (this: Logger, ...args: Parameters<Logger["child"]>) {
    counted.children++;
    return child.apply(this, args);
  } as Logger["child"];
  return { parent, lines, counted };
}

/** pino writes synchronously to a stream destination only after a tick. */
const flushed = () => new Promise((resolve) => setImmediate(resolve));

describe("requestLogger", () => {
  it("makes no child for a request that logs nothing at its level", async () => {
    const { parent, lines, counted } = capture("warn");
    const log = requestLogger(parent, { request_id: "req_1" }, {});
    log.info("not at this level");
    log.debug({ a: 1 }, "nor this");
    await flushed();
    assert.equal(counted.children, 0);
    assert.equal(lines.length, 0);
    assert.equal(log.level, "warn");
  });

  it("writes a request's lines with its id, through one child, secrets redacted", async () => {
    const { parent, lines, counted } = capture("info");
    const log = requestLogger(parent, { request_id: "req_2" }, {});
    log.error({ err: new Error("boom"), headers: { authorization: "Bearer sk-secret" } }, "failed");
    log.warn("and again");
    await flushed();
    assert.equal(counted.children, 1);
    assert.equal(lines.length, 2);
    assert.equal(lines[0]!.request_id, "req_2");
    assert.equal(lines[0]!.msg, "failed");
    assert.equal((lines[0]!.err as { message: string }).message, "boom");
    assert.deepEqual(lines[0]!.headers, { authorization: "[redacted]" });
    assert.equal(lines[1]!.request_id, "req_2");
    assert.equal(lines[1]!.level, 40);
  });

  it("changes its own level only, and children carry both bindings", async () => {
    const { parent, lines } = capture("info");
    const log = requestLogger(parent, { request_id: "req_3" }, {});
    log.level = "debug";
    log.debug("now at debug");
    log.child({ part: "x" }).info("from a child");
    parent.debug("the parent stays at info");
    await flushed();
    assert.equal(parent.level, "info");
    assert.deepEqual(
      lines.map((l) => [l.msg, l.request_id, l.part]),
      [
        ["now at debug", "req_3", undefined],
        ["from a child", "req_3", "x"],
      ],
    );
  });
});

describe("requestLine", () => {
  const facts = {
    request_id: "req_4",
    method: "POST",
    route: "/v1/chat/completions",
    status: 200,
    ms: 12,
    account: "acc_1",
    key: "key_1",
  };
  const call: LoggedCall = {
    api: "messages",
    relayed: true,
    publicModel: "claude",
    provider: "anthropic",
    upstreamModel: "claude-x",
    promptTokens: 7,
    completionTokens: 3,
    costNanos: 1_250_000,
    ttftMs: 5,
    attempts: [{}, {}],
    outcome: { status: "ok", errorCode: null },
  };

  it("a relayed call's fields after the request's", () => {
    assert.deepEqual(requestLine(facts, call), {
      ...facts,
      api: "messages",
      model: "claude",
      provider: "anthropic",
      upstream_model: "claude-x",
      attempts: 2,
      prompt_tokens: 7,
      completion_tokens: 3,
      cost_usd: 0.00125,
      ttft_ms: 5,
      call_status: "ok",
      error_code: null,
    });
  });

  it("a request that is no relayed call keeps its own fields", () => {
    assert.equal(requestLine(facts, null), facts);
    assert.equal(requestLine(facts, { ...call, relayed: false }), facts);
  });
});
