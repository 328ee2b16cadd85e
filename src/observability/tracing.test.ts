import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createLogger } from "./logger.ts";
import { NO_TRACING, shownEndpoint, startTracing, TracingConfigError, tracesEndpoint } from "./tracing.ts";

describe("tracesEndpoint", () => {
  const file = { endpoint: "http://file:4318/v1/traces" };

  test("the traces variable as it is, over the general one, over the file, over the default", () => {
    const env = {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example:4318/custom",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://general:4318",
    };
    assert.equal(tracesEndpoint(file, env), "https://traces.example:4318/custom");
    assert.equal(
      tracesEndpoint(file, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://general:4318/" }),
      "http://general:4318/v1/traces",
    );
    assert.equal(tracesEndpoint(file, { OTEL_EXPORTER_OTLP_ENDPOINT: "  " }), file.endpoint);
    assert.equal(tracesEndpoint({}, {}), "http://localhost:4318/v1/traces");
  });

  test("a variable that is not an http(s) URL is refused, naming it", () => {
    assert.throws(() => tracesEndpoint({}, { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }), {
      name: "TracingConfigError",
      message: /OTEL_EXPORTER_OTLP_ENDPOINT must be an http/,
    });
    assert.throws(
      () => tracesEndpoint({}, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "not a url" }),
      TracingConfigError,
    );
  });

  test("the logged endpoint leaves out credentials and the query", () => {
    assert.equal(
      shownEndpoint("https://user:pw@collector:4318/v1/traces?token=s3cret"),
      "https://collector:4318/v1/traces",
    );
  });
});

describe("startTracing", () => {
  test("off: the no-op tracing, whatever the environment says", async () => {
    const tracing = await startTracing(
      { enabled: false, sample_ratio: 1, account_id: false },
      {
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" },
        logger: createLogger("silent"),
        instanceId: "i",
        version: "0",
      },
    );
    assert.equal(tracing, NO_TRACING);
    assert.equal(
      tracing.startCall({ id: "r", method: "POST", routeOptions: {}, headers: {} }, "x"),
      undefined,
    );
  });
});
