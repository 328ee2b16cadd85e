import assert from "node:assert/strict";
import { test } from "node:test";
import { parseChatRequest } from "../apis/chat-completions/request.ts";
import type { GatewayError } from "../errors/index.ts";
import { ANTHROPIC_RULES } from "./anthropic/request.ts";
import { applyFieldRules, rulesTable } from "./field-policy.ts";

const request = (fields: Record<string, unknown>) =>
  parseChatRequest({ model: "m", messages: [{ role: "user", content: "x" }], ...fields });

test("a field that would change the answer is refused, naming it and the provider", () => {
  assert.throws(
    () => applyFieldRules(request({ n: 2 }), ANTHROPIC_RULES, "Anthropic", false),
    (err: GatewayError) =>
      err.errorName === "invalid_request" &&
      err.param === "n" &&
      err.message ===
        "'n' is not supported by Anthropic: it returns one choice per request. Leave it out, or ask the gateway's operator to set drop_unsupported on this provider.",
  );
});

test("a value that changes nothing passes; the request itself is not changed", () => {
  const req = request({ n: 1, logprobs: false, presence_penalty: 0 });
  assert.equal(applyFieldRules(req, ANTHROPIC_RULES, "Anthropic", false), req);
});

test("drop_unsupported: the refused fields are left out of a copy, the client's request untouched", () => {
  const req = request({ n: 2, seed: 1, temperature: 0.2 });
  const out = applyFieldRules(req, ANTHROPIC_RULES, "Anthropic", true);
  assert.equal(out.n, undefined);
  assert.equal(out.seed, undefined);
  assert.equal(out.temperature, 0.2);
  assert.equal(req.n, 2);
});

test("the docs table lists every forwarded field once", () => {
  const table = rulesTable(ANTHROPIC_RULES);
  assert.equal(table.split("\n").length, 2 + Object.keys(ANTHROPIC_RULES).length);
  assert.match(table, /\| `n` \| 1: dropped; more: refused \|/);
});
