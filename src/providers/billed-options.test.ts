// Second audit, item 9: `cache_control.ttl: "1h"` was forwarded while every cache write was
// charged at the five-minute rate (Anthropic bills one-hour writes at 2× input), and
// `service_tier: "priority"` was forwarded and charged the standard price.
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseChatRequest } from "../domain/chat-request.ts";
import type { GatewayError } from "../errors/index.ts";
import { withoutDearOptions } from "./billed-options.ts";
import type { NativeRequest, UpstreamCall } from "./types.ts";

const call = (fields: Record<string, unknown> = {}, native?: NativeRequest): UpstreamCall => ({
  request: parseChatRequest({ model: "m", messages: [{ role: "user", content: "x" }], ...fields }),
  upstreamModel: "m",
  outputBound: 100,
  signal: new AbortController().signal,
  native,
});

const hour = { type: "ephemeral", ttl: "1h" };
const messagesBody = {
  model: "m",
  system: [{ type: "text", text: "s", cache_control: hour }],
  tools: [{ name: "t", input_schema: { type: "object" }, cache_control: hour }],
  messages: [
    {
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "u",
          content: [{ type: "text", text: "r", cache_control: hour }],
        },
        { type: "text", text: "go", cache_control: { type: "ephemeral", ttl: "5m" } },
      ],
    },
  ],
};

test("a one-hour cache marker is sent as a five-minute one, everywhere in the body, and noted", () => {
  const native: NativeRequest = { api: "messages", body: messagesBody, headers: {} };
  const out = withoutDearOptions(call({}, native), "claude", false);
  const body = JSON.stringify(out.native!.body);
  assert.equal(body.includes('"1h"'), false);
  assert.equal(body.split('"cache_control"').length - 1, 4, "every marker stays, only its lifetime changes");
  assert.deepEqual(out.dropped, ["cache_control.ttl (3 markers)"]);
  assert.equal(
    JSON.stringify(messagesBody).includes('"1h"'),
    true,
    "the client's body, shared by attempts, is untouched",
  );
  assert.throws(
    () => withoutDearOptions(call({}, native), "claude", true),
    (err: GatewayError) => err.status === 400 && err.param === "cache_control.ttl",
  );
});

test("service_tier priority is left out of the canonical request and a native body; other tiers pass", () => {
  const translated = withoutDearOptions(call({ service_tier: "priority" }), "oai", false);
  assert.equal(translated.request.service_tier, undefined);
  assert.deepEqual(translated.dropped, ["service_tier (priority)"]);
  const native: NativeRequest = {
    api: "responses",
    body: { model: "m", input: "x", service_tier: "priority" },
    headers: {},
  };
  const sent = withoutDearOptions(call({ service_tier: "priority" }, native), "oai", false);
  assert.equal("service_tier" in sent.native!.body, false);
  assert.deepEqual(sent.dropped, ["service_tier (priority)"], "noted once");
  const flex = call({ service_tier: "flex" });
  assert.equal(
    withoutDearOptions(flex, "oai", false),
    flex,
    "a tier billed at or below the standard price passes",
  );
  assert.throws(
    () => withoutDearOptions(call({ service_tier: "priority" }), "oai", true),
    /service_tier 'priority'/,
  );
});
