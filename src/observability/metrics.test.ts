import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { GatewayError } from "../errors/index.ts";
import { Metrics, VERSION } from "./metrics.ts";

describe("Metrics", () => {
  test("every gateway's registry serves the one set of process series the process collects", async () => {
    const a = new Metrics();
    const b = new Metrics();
    const cpu = a.registry.getSingleMetric("process_cpu_user_seconds_total");
    assert.ok(cpu, "process series are registered");
    assert.equal(b.registry.getSingleMetric("process_cpu_user_seconds_total"), cpu, "shared, not made twice");
    assert.ok(a.registry.getSingleMetric("nodejs_eventloop_lag_seconds"));
    assert.match(await b.registry.metrics(), /^nodejs_heap_size_total_bytes \d+/m);
  });

  test("the build: the version of package.json, Node's, and the commit when given", async () => {
    const text = await new Metrics({ commit: " f00d " }).registry.metrics();
    assert.match(VERSION, /^\d+\.\d+\.\d+/);
    assert.ok(
      text.includes(
        `gateway_build_info{version="${VERSION}",node_version="${process.version}",commit="f00d"} 1`,
      ),
    );
    assert.match(await new Metrics().registry.metrics(), /gateway_build_info\{[^}]*commit="unknown"\} 1/);
  });

  test("cost by account only with accountLabel", async () => {
    const off = new Metrics();
    off.observeCost("m", "acc_1", 0.5);
    const offText = await off.registry.metrics();
    assert.match(offText, /gateway_cost_usd_total\{model="m"\} 0.5/);
    assert.doesNotMatch(offText, /acc_1|gateway_account_cost_usd_total/);

    const on = new Metrics({ accountLabel: true });
    on.observeCost("m", "acc_1", 0.5);
    on.observeCost("m", null, 0.25);
    const onText = await on.registry.metrics();
    assert.match(onText, /gateway_account_cost_usd_total\{account="acc_1"\} 0.5/);
    assert.match(onText, /gateway_cost_usd_total\{model="m"\} 0.75/);
  });

  test("refusals are labelled by the catalog's code, not a code the upstream reported", async () => {
    const metrics = new Metrics();
    metrics.observeRefusal(new GatewayError("upstream_bad_request", { code: "made_up_by_upstream" }), 400);
    metrics.observeRefusal(new GatewayError("upstream_bad_request", { code: "another_one" }), 400);
    metrics.observeRefusal(new GatewayError("upstream_rate_limited"), 529);
    const text = await metrics.registry.metrics();
    assert.match(
      text,
      /gateway_refusals_total\{code="upstream_bad_request",type="invalid_request_error",status="400"\} 2/,
    );
    assert.match(
      text,
      /gateway_refusals_total\{code="upstream_rate_limited",type="upstream_error",status="529"\} 1/,
    );
    assert.doesNotMatch(text, /made_up_by_upstream|another_one/);
  });

  test("upstream latency by provider and public model", async () => {
    const metrics = new Metrics();
    metrics.observeFirstByte("p", "m", 0.2);
    metrics.observeUpstream("p", "m", "ok", 1.5);
    metrics.observeUpstream("p", "m", "error", 0.1);
    const text = await metrics.registry.metrics();
    assert.match(text, /gateway_upstream_first_byte_seconds_count\{provider="p",model="m"\} 1/);
    assert.match(text, /gateway_upstream_duration_seconds_sum\{provider="p",model="m",outcome="ok"\} 1.5/);
    assert.match(text, /gateway_upstream_duration_seconds_count\{provider="p",model="m",outcome="error"\} 1/);
  });
});
