import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { retryAfterMs, UpstreamError } from "./upstream-error.ts";

describe("UpstreamError.retryable", () => {
  test("'not now' statuses are retryable by default", () => {
    for (const status of [408, 409, 429, 500, 502, 503, 504, 529])
      assert.equal(new UpstreamError("status", "x", { status }).retryable, true, `HTTP ${status}`);
  });

  test("'not this request' statuses are not", () => {
    for (const status of [400, 401, 403, 404, 413, 422, 501])
      assert.equal(new UpstreamError("status", "x", { status }).retryable, false, `HTTP ${status}`);
  });

  test("an error reported inside a 200 stream (no status) is retryable", () => {
    assert.equal(new UpstreamError("status", "x").retryable, true);
  });

  test("timeouts, network and malformed replies are retryable", () => {
    for (const failure of ["timeout", "network", "malformed"] as const)
      assert.equal(new UpstreamError(failure, "x").retryable, true, failure);
  });

  test("an explicit answer from the adapter overrides the default", () => {
    assert.equal(new UpstreamError("status", "x", { status: 429, retryable: false }).retryable, false);
    assert.equal(new UpstreamError("status", "x", { status: 400, retryable: true }).retryable, true);
    assert.equal(new UpstreamError("network", "x", { retryable: false }).retryable, false);
  });

  test("keeps failure, status, retry-after, message and cause", () => {
    const cause = new Error("ECONNRESET");
    const err = new UpstreamError("status", "the upstream answered HTTP 429", {
      status: 429,
      retryAfterMs: 7000,
      cause,
    });
    assert.equal(err.name, "UpstreamError");
    assert.equal(err.failure, "status");
    assert.equal(err.status, 429);
    assert.equal(err.retryAfterMs, 7000);
    assert.equal(err.message, "the upstream answered HTTP 429");
    assert.equal(err.cause, cause);
    assert.equal("cause" in new UpstreamError("network", "x"), false);
  });
});

describe("retryAfterMs", () => {
  const NOW = Date.parse("2025-06-01T12:00:00Z");

  test("seconds, whole or fractional", () => {
    assert.equal(retryAfterMs("7", NOW), 7000);
    assert.equal(retryAfterMs("0", NOW), 0);
    assert.equal(retryAfterMs("1.5", NOW), 1500);
  });

  test("an HTTP date, as milliseconds from now", () => {
    assert.equal(retryAfterMs("Sun, 01 Jun 2025 12:00:30 GMT", NOW), 30_000);
  });

  test("a date already past is 0", () => {
    assert.equal(retryAfterMs("Sun, 01 Jun 2025 11:59:00 GMT", NOW), 0);
  });

  test("the first of repeated headers", () => {
    assert.equal(retryAfterMs(["3", "9"], NOW), 3000);
  });

  test("absent, empty or garbage is undefined", () => {
    assert.equal(retryAfterMs(undefined, NOW), undefined);
    assert.equal(retryAfterMs("", NOW), undefined);
    assert.equal(retryAfterMs([], NOW), undefined);
    assert.equal(retryAfterMs("soon", NOW), undefined);
  });
});
