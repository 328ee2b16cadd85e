import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { GatewayError } from "./gateway-error.ts";
import { fromUpstream } from "./upstream.ts";
import { UpstreamError } from "./upstream-error.ts";

function expectMapping(err: unknown, code: string, status: number) {
  const mapped = fromUpstream(err);
  assert.ok(mapped instanceof GatewayError);
  assert.equal(mapped.code, code);
  assert.equal(mapped.status, status);
  return mapped;
}

describe("fromUpstream", () => {
  test("a timeout is 504 upstream_timeout, with the adapter's message and the error as cause", () => {
    const err = new UpstreamError("timeout", "the upstream went silent in the middle of its answer");
    const mapped = expectMapping(err, "upstream_timeout", 504);
    assert.equal(mapped.message, err.message);
    assert.equal(mapped.cause, err);
  });

  test("an upstream 400 or 422 is 400 upstream_bad_request", () => {
    for (const status of [400, 422]) {
      const err = new UpstreamError("status", `the upstream answered HTTP ${status}: bad`, { status });
      const mapped = expectMapping(err, "upstream_bad_request", 400);
      assert.equal(mapped.message, err.message);
      assert.equal(mapped.toBody().error.type, "invalid_request_error");
    }
  });

  test("any other upstream status is 502 upstream_error", () => {
    for (const status of [401, 403, 404, 408, 429, 500, 503, 529, undefined]) {
      const err = new UpstreamError("status", "the upstream answered", { status });
      const mapped = expectMapping(err, "upstream_error", 502);
      assert.equal(mapped.message, err.message);
    }
  });

  test("a refused provider key is 502 upstream_key_refused, never retried, without the upstream's words", () => {
    const err = new UpstreamError(
      "status",
      "the upstream answered HTTP 401: Incorrect API key provided: sk-ab***yz",
      {
        status: 401,
        refused: "key",
        detail: { message: "Incorrect API key provided: sk-ab***yz" },
      },
    );
    const mapped = expectMapping(err, "upstream_key_refused", 502);
    assert.equal(mapped.toBody().error.type, "upstream_error");
    assert.match(mapped.message, /operator must check the provider's key/);
    assert.match(mapped.message, /HTTP 401/);
    assert.equal(mapped.message.includes("sk-"), false);
    assert.equal(mapped.headers?.["x-should-retry"], "false");
  });

  test("a prompt refused by the upstream's content filter is our 400 content_filter", () => {
    const err = new UpstreamError("status", "the upstream answered HTTP 400: filtered", {
      status: 400,
      refused: "prompt",
      detail: { message: "The response was filtered", code: "content_filter", param: "prompt" },
    });
    const mapped = expectMapping(err, "content_filter", 400);
    assert.equal(mapped.toBody().error.type, "invalid_request_error");
    assert.equal(
      mapped.message,
      "The upstream's content filter refused the prompt: The response was filtered",
    );
    assert.equal(mapped.param, null);
  });

  test("network and malformed failures are 502 upstream_error", () => {
    for (const failure of ["network", "malformed"] as const) {
      const err = new UpstreamError(failure, `a ${failure} failure`);
      const mapped = expectMapping(err, "upstream_error", 502);
      assert.equal(mapped.message, err.message);
      assert.equal(mapped.cause, err);
    }
  });

  test("a DOMException TimeoutError (AbortSignal.timeout) is upstream_timeout with the catalog's message", () => {
    const err = new DOMException("The operation was aborted due to timeout", "TimeoutError");
    const mapped = expectMapping(err, "upstream_timeout", 504);
    assert.equal(mapped.message, "The upstream model did not answer in time.");
    assert.equal(mapped.cause, err);
  });

  test("another DOMException (an AbortError) is not a timeout", () => {
    expectMapping(new DOMException("aborted", "AbortError"), "internal_error", 500);
  });

  test("a GatewayError passes through as it is", () => {
    const err = new GatewayError("quota_exceeded");
    assert.equal(fromUpstream(err), err);
  });

  test("anything else is internal_error, without its message", () => {
    const err = new TypeError("Cannot read properties of undefined (reading 'secret')");
    const mapped = expectMapping(err, "internal_error", 500);
    assert.equal(mapped.message.includes("secret"), false);
    assert.equal(mapped.cause, err);
    expectMapping("a string", "internal_error", 500);
    expectMapping(undefined, "internal_error", 500);
  });
});
