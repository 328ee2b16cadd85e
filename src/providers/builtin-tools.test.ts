import assert from "node:assert/strict";
import { test } from "node:test";
import { GatewayError } from "../errors/index.ts";
import { refuseBuiltinTools } from "./builtin-tools.ts";
import type { NativeRequest, Provider } from "./types.ts";

const native = (...uses: Array<[string, string]>): NativeRequest => ({
  api: "responses",
  body: {},
  headers: {},
  builtinTools: uses.map(([type, param]) => ({ type, param })),
});
const provider = (allowed?: string[]) =>
  ({ ...(allowed ? { builtinTools: () => new Set(allowed) } : {}) }) as unknown as Provider;

const refusal = (call: NativeRequest, p: Provider) => {
  try {
    refuseBuiltinTools(call, p);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return { name: err.errorName, status: err.status, param: err.param, message: err.message };
  }
  return undefined;
};

test("a call without built-in tools passes any provider", () => {
  assert.equal(refusal(native(), provider()), undefined);
  assert.doesNotThrow(() => refuseBuiltinTools(undefined, provider()));
});

test("a provider that passes none refuses the first tool, naming it and its param", () => {
  const r = refusal(native(["web_search", "tools[0]"], ["file_search", "tools[1]"]), provider());
  assert.equal(r?.name, "invalid_request");
  assert.equal(r?.status, 400);
  assert.equal(r?.param, "tools[0]");
  assert.match(r!.message, /built-in tool 'web_search'/);
});

test("every tool must be allowed: the first one that is not is named", () => {
  const r = refusal(
    native(["web_search", "tools[0]"], ["file_search", "tools[1]"]),
    provider(["web_search"]),
  );
  assert.equal(r?.param, "tools[1]");
  assert.match(r!.message, /'file_search'/);
  assert.equal(refusal(native(["web_search", "tools[0]"]), provider(["web_search"])), undefined);
});

test("a dated tool type is its tool; an item needs one of the tools that make it", () => {
  assert.equal(
    refusal(native(["web_search_preview_2025_03_11", "tools[0]"]), provider(["web_search_preview"])),
    undefined,
  );
  assert.equal(refusal(native(["web_search_call", "input[2]"]), provider(["web_search_preview"])), undefined);
  assert.equal(refusal(native(["web_search_call", "input[2]"]), provider(["web_search"])), undefined);
  const r = refusal(native(["web_search_call", "previous_response_id"]), provider(["file_search"]));
  assert.equal(r?.param, "previous_response_id");
  assert.match(r!.message, /item 'web_search_call'/);
});

test("an unknown type is never allowed", () => {
  assert.equal(refusal(native(["quantum_oracle", "tools[0]"]), provider(["web_search"]))?.param, "tools[0]");
});
