import assert from "node:assert/strict";
import { test } from "node:test";
import { parseChatRequest } from "../domain/chat-request.ts";
import type { GatewayError } from "../errors/index.ts";
import { ANTHROPIC_RULES } from "./anthropic/request.ts";
import { applyFieldRules, rulesTable } from "./field-policy.ts";
import type { UpstreamCall } from "./types.ts";

const call = (fields: Record<string, unknown>): UpstreamCall => ({
  request: parseChatRequest({ model: "m", messages: [{ role: "user", content: "x" }], ...fields }),
  upstreamModel: "m",
  outputBound: 100,
  signal: new AbortController().signal,
});

test("strict: a field that would change the answer is refused, naming it and the provider", () => {
  assert.throws(
    () => applyFieldRules(call({ n: 2 }), ANTHROPIC_RULES, "Anthropic", true),
    (err: GatewayError) =>
      err.errorName === "invalid_request" &&
      err.param === "n" &&
      err.message ===
        "'n' is not supported by Anthropic: it returns one choice per request. Leave it out, or ask the gateway's operator to turn off strict mode on this provider (it then drops the field and says so in the x-gateway-dropped header).",
  );
});

test("a value that changes nothing passes; the request itself is not changed, and nothing is noted", () => {
  const c = call({ n: 1, logprobs: false, presence_penalty: 0 });
  assert.equal(applyFieldRules(c, ANTHROPIC_RULES, "Anthropic", false), c.request);
  assert.equal(c.dropped, undefined);
});

test("by default the fields strict mode refuses are left out of a copy and noted; the client's request untouched", () => {
  const c = call({ n: 2, seed: 1, temperature: 0.2 });
  const out = applyFieldRules(c, ANTHROPIC_RULES, "Anthropic", false);
  assert.equal(out.n, undefined);
  assert.equal(out.seed, undefined);
  assert.equal(out.temperature, 0.2);
  assert.equal(c.request.n, 2);
  assert.deepEqual(c.dropped, ["n", "seed"]);
});

test("the docs table lists every forwarded field once", () => {
  const table = rulesTable(ANTHROPIC_RULES);
  assert.equal(table.split("\n").length, 2 + Object.keys(ANTHROPIC_RULES).length);
  assert.match(table, /\| `n` \| 1: dropped; more: refused \|/);
});
