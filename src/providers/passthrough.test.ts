import assert from "node:assert/strict";
import { test } from "node:test";
import { parseChatRequest } from "../domain/chat-request.ts";
import type { GatewayError } from "../errors/index.ts";
import { capabilitiesOf } from "./capabilities.ts";
import { denies, droppedHeader, prepareAttempt, type Untranslated } from "./passthrough.ts";
import type { NativeRequest, Provider, UpstreamCall } from "./types.ts";

const reasons = capabilitiesOf({ reasoning: true }, "m");
const call = (native?: NativeRequest, fields: Record<string, unknown> = {}): UpstreamCall => ({
  request: parseChatRequest({ model: "m", messages: [{ role: "user", content: "x" }], ...fields }),
  upstreamModel: "m",
  outputBound: 100,
  signal: new AbortController().signal,
  native,
});
const provider = (
  options: { native?: boolean; strict?: boolean; deny?: string[]; builtin?: string[] } = {},
) =>
  ({
    id: "up",
    sendsNatively: () => options.native ?? false,
    passthrough: { strict: options.strict ?? false, deny: options.deny ?? [] },
    builtinTools: () => new Set(options.builtin ?? []),
  }) as unknown as Provider;

const messagesNative = (
  body: Record<string, unknown>,
  untranslated: Untranslated[] = [{ param: "output_config", name: "output_config" }],
): NativeRequest => ({
  api: "messages",
  body,
  headers: {},
  untranslated,
});

test("translated: what the canonical request lacks is noted as dropped, and the call goes", () => {
  const c = call(
    messagesNative({ output_config: { effort: "high" } }, [
      { param: "output_config", name: "output_config" },
      { param: "tools[1]", name: "web_search_20250305" },
    ]),
  );
  const out = prepareAttempt(c, provider(), reasons);
  assert.deepEqual(out.dropped, ["output_config", "tools[1] (web_search_20250305)"]);
  assert.equal(droppedHeader(out.dropped!), "output_config, tools[1] (web_search_20250305)");
});

test("strict: the first construct it cannot carry refuses the call, with its capability class for Claude Code", () => {
  const c = call(
    messagesNative({}, [
      {
        param: "output_config.format",
        name: "format json_schema",
        capability: "structured_outputs_unsupported",
      },
    ]),
  );
  assert.throws(
    () => prepareAttempt(c, provider({ strict: true }), reasons),
    (err: GatewayError) =>
      err.status === 400 &&
      err.param === "output_config.format" &&
      err.capability === "structured_outputs_unsupported",
  );
});

test("native: everything passes but the denied names, taken out of a copy of the body and noted", () => {
  const body = {
    model: "m",
    safeguards: { mode: "auto" },
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "x" },
          { type: "document", source: {} },
        ],
      },
    ],
    tools: [
      { name: "a", input_schema: {} },
      { type: "web_search_20250305", name: "web_search" },
    ],
  };
  const native = messagesNative(body);
  const out = prepareAttempt(
    call(native),
    provider({ native: true, deny: ["safeguards", "web_search_*", "document"] }),
    reasons,
  );
  assert.equal("safeguards" in out.native!.body, false);
  assert.deepEqual(out.native!.body.tools, [{ name: "a", input_schema: {} }]);
  assert.deepEqual((out.native!.body.messages as any)[0].content, [{ type: "text", text: "x" }]);
  assert.deepEqual(out.dropped, [
    "safeguards",
    "tools[1] (web_search_20250305)",
    "messages[0].content[1] (document)",
  ]);
  assert.equal(body.tools.length, 2, "the client's body, shared by every attempt, is untouched");
  assert.equal(
    native.untranslated!.length,
    1,
    "a native upstream takes what the translation could not carry",
  );
  const plain = call(messagesNative({ model: "m" }));
  assert.equal(
    prepareAttempt(plain, provider({ native: true }), reasons),
    plain,
    "nothing denied: the same call",
  );
});

test("native Responses: built-in tools the provider does not allow are taken out with a notice; strict refuses", () => {
  const native: NativeRequest = {
    api: "responses",
    body: { tools: [{ type: "web_search" }, { type: "tool_search" }] },
    headers: {},
    builtinTools: [
      { type: "web_search", param: "tools[0]" },
      { type: "tool_search", param: "tools[1]" },
    ],
  };
  const out = prepareAttempt(call(native), provider({ native: true, builtin: ["web_search"] }), reasons);
  assert.deepEqual(out.native!.body.tools, [{ type: "web_search" }]);
  assert.deepEqual(out.dropped, ["tools[1] (tool_search)"]);
  assert.throws(() =>
    prepareAttempt(call(native), provider({ native: true, strict: true, builtin: ["web_search"] }), reasons),
  );
});

test("capabilities: a translated call loses what the model cannot take, noted; a native one is the client's own", () => {
  const c = call(undefined, {
    reasoning_effort: "high",
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "x" },
          { type: "image_url", image_url: { url: "https://x/y.png" } },
        ],
      },
    ],
  });
  const out = prepareAttempt(c, provider(), { reasoning: false, images: false, tools: true });
  assert.equal(out.request.reasoning_effort, undefined);
  assert.deepEqual(out.request.messages[0]!.content, [{ type: "text", text: "x" }]);
  assert.deepEqual(out.dropped, ["reasoning_effort", "messages[0].content[1] (image)"]);
  assert.equal(c.request.reasoning_effort, "high", "the client's request is untouched");
  const native = call(messagesNative({ thinking: { type: "adaptive" } }, []), { reasoning_effort: "high" });
  assert.equal(
    prepareAttempt(native, provider({ native: true }), { reasoning: false, images: true, tools: true }),
    native,
  );
});

test("capabilities are inferred from the upstream model's name where the configuration says nothing", () => {
  for (const name of [
    "o3-mini",
    "gpt-5.1",
    "claude-sonnet-4-6",
    "claude-3-7-sonnet",
    "gemini-2.5-pro",
    "deepseek-reasoner",
    "qwen3-32b",
  ])
    assert.equal(capabilitiesOf(undefined, name).reasoning, true, name);
  for (const name of ["gpt-4o", "gpt-4.1-mini", "claude-3-5-haiku", "llama-3.1-8b", "mock-model"])
    assert.equal(capabilitiesOf(undefined, name).reasoning, false, name);
  assert.equal(capabilitiesOf({ reasoning: true }, "mock-model").reasoning, true);
});

test("deny names match exactly, or by a prefix ending in *; the header is bounded and printable", () => {
  assert.equal(denies(["oauth-*"], "oauth-2025-04-20"), true);
  assert.equal(denies(["oauth-*"], "xoauth"), false);
  assert.equal(denies(["top_k"], "top_k"), true);
  const many = Array.from({ length: 20 }, (_, i) => `f${i}`);
  assert.equal(droppedHeader(many), `${many.slice(0, 16).join(", ")}, and 4 more`);
  assert.equal(droppedHeader(["caf\u00e9"]), "caf?");
  assert.equal(droppedHeader([]), undefined);
});
