// GET /v1/models/{model}, as the openai SDK's models.retrieve() calls it: a model of the key's
// plan, one whose id has a slash too (sent encoded or not); any other is 404 model_not_found.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI, { NotFoundError } from "openai";
import { startTestGateway, TEST_MODEL, type TestGateway, testConfig } from "./support/gateway.ts";
import { type MockUpstream, startMockUpstream } from "./support/mock-openai-upstream.ts";

describe("GET /v1/models/{model}", () => {
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
          // provider/name, as some providers spell their models
          { id: "acme/chat-1", provider: "mock", upstream_model: "mock-model" },
        ],
        plans: [{ id: "default", quota_tokens: 1_000_000_000, models: [TEST_MODEL, "demo", "acme/chat-1"] }],
      },
    });
    secret = (await gw.key(await gw.account("models"))).secret;
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  const sdk = () => new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });

  it("GET /v1/models/{model} serves the plan's models, ids with a slash included; 404 otherwise", async () => {
    const model = await sdk().models.retrieve(TEST_MODEL);
    assert.deepEqual(Object.keys(model).sort(), ["created", "id", "object", "owned_by"]);
    assert.equal(model.id, TEST_MODEL);
    assert.equal((await sdk().models.retrieve("acme/chat-1")).id, "acme/chat-1");
    const raw = await fetch(`${gw.baseURL}/models/acme/chat-1`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    assert.equal(((await raw.json()) as { id: string }).id, "acme/chat-1", "unencoded too");
    const missing = await sdk()
      .models.retrieve("no-such-model")
      .catch((e: unknown) => e);
    assert.ok(missing instanceof NotFoundError);
    assert.equal((missing.error as { code: string }).code, "model_not_found");
  });
});
