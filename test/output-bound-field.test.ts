// The reserved output bound reaches an upstream in the field its model takes: OpenAI's
// reasoning models refuse max_tokens, so a model configured with output_bound_field sends
// max_completion_tokens; one left on the default sends max_tokens, and the upstream's refusal of
// it reaches the client as it is.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI, { BadRequestError } from "openai";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

describe("the output bound field", () => {
  let upstream: MockUpstream;
  let gw: TestGateway;
  let secret: string;

  before(async () => {
    upstream = await startMockUpstream();
    gw = await startTestGateway({
      upstream,
      config: {
        models: [
          ...testConfig(upstream).models,
          // OpenAI's reasoning models take the bound only as max_completion_tokens
          {
            id: "reasoner",
            provider: "mock",
            upstream_model: "o3-mini",
            output_bound_field: "max_completion_tokens",
          },
          { id: "reasoner-unset", provider: "mock", upstream_model: "o3-mini" },
        ],
        plans: [
          {
            id: "default",
            quota_tokens: 1_000_000_000,
            models: [TEST_MODEL, "demo", "reasoner", "reasoner-unset"],
          },
        ],
      },
    });
    secret = (await gw.key(await gw.account("reasoning"))).secret;
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const sdk = () => new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });

  it("a reasoning model gets the bound as max_completion_tokens where configured; unset, its refusal comes through", async () => {
    upstream.reset();
    const ok = await sdk().chat.completions.create({
      model: "reasoner",
      messages: [{ role: "user", content: "think mock:tokens=3" }],
    });
    assert.equal(ok.choices[0]!.finish_reason, "stop");
    const sent = upstream.requests.at(-1)!.body;
    assert.equal(sent.max_tokens, undefined);
    assert.equal(typeof sent.max_completion_tokens, "number", "the reserved bound, in the field it accepts");
    const refused = await sdk()
      .chat.completions.create({ model: "reasoner-unset", messages: [{ role: "user", content: "think" }] })
      .catch((e: unknown) => e);
    assert.ok(refused instanceof BadRequestError);
    assert.equal(refused.code, "unsupported_parameter");
    assert.equal(refused.param, "max_tokens");
  });
});
