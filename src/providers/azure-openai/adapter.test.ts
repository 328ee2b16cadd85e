// The Azure OpenAI adapter: Azure's URLs and key header on the openai-compatible wire
// handling, and what Azure adds (a prompt-filter frame with no choices, the content_filter
// refusal of a prompt).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { drain, json, recordingServerForTests, sse } from "../../../test/support/adapter-kit.ts";
import { AZURE_PROMPT_FILTERED } from "../../../test/support/mock-openai-upstream.ts";
import { parseChatRequest } from "../../domain/chat-request.ts";
import { UpstreamError } from "../../errors/upstream-error.ts";
import type { Provider, UpstreamCall } from "../types.ts";
import { azureOpenAIConfig } from "./config.ts";
import { azureOpenAI } from "./index.ts";

const KEY = "azure0123456789abcdef";
const upstream = recordingServerForTests();

function provider(apiVersion?: string): Provider {
  const p = azureOpenAI.create(
    azureOpenAIConfig.parse({
      type: "azure-openai",
      id: "az",
      base_url: `${upstream.server.origin}/`,
      api_key_env: "KEY",
      ...(apiVersion ? { api_version: apiVersion } : {}),
    }),
    { KEY },
  );
  return upstream.track(p);
}

const call = (fields: Record<string, unknown> = {}): UpstreamCall => ({
  request: parseChatRequest({ model: "gpt-4o", messages: [{ role: "user", content: "Hello" }], ...fields }),
  upstreamModel: "my deployment",
  outputBound: 100,
  signal: new AbortController().signal,
});

test("the deployment URL with api-version, the api-key header, OpenAI's body", async () => {
  upstream.server.answer = sse(readFileSync(new URL("./fixtures/prompt-filter-stream.sse", import.meta.url)));
  await drain(provider().stream(call({ stream: true })));
  const req = upstream.server.received[0]!;
  assert.equal(req.url, "/openai/deployments/my%20deployment/chat/completions?api-version=2024-10-21");
  assert.equal(req.headers["api-key"], KEY);
  assert.equal(req.headers.authorization, undefined);
  assert.equal(req.body.max_tokens, 100);
  assert.equal(req.body.stream, true);
});

test("api_version v1: /openai/v1/chat/completions, the model in the body", async () => {
  upstream.server.answer = sse(readFileSync(new URL("./fixtures/prompt-filter-stream.sse", import.meta.url)));
  await drain(provider("v1").stream(call({ stream: true })));
  assert.equal(upstream.server.received[0]!.url, "/openai/v1/chat/completions");
  assert.equal(upstream.server.received[0]!.body.model, "my deployment");
});

test("the prompt-filter frame (no choices, no usage) is not passed on; the rest is, usage included", async () => {
  upstream.server.answer = sse(readFileSync(new URL("./fixtures/prompt-filter-stream.sse", import.meta.url)));
  const { chunks, error } = await drain(provider().stream(call({ stream: true })));
  assert.equal(error, undefined);
  assert.equal(chunks.length, 4);
  assert.ok(chunks.every((c) => c.choices.length > 0 || c.usage));
  assert.equal(chunks[1]!.choices[0]!.delta.content, "Hello");
  assert.equal(chunks.at(-1)!.usage?.prompt, 9);
});

test("a prompt Azure's filter refuses is a refused prompt, not retryable", async () => {
  upstream.server.answer = json(400, JSON.parse(AZURE_PROMPT_FILTERED));
  await assert.rejects(provider().complete(call()), (err: UpstreamError) => {
    assert.equal(err.refused, "prompt");
    assert.equal(err.retryable, false);
    return true;
  });
});

test("an error inside the 200 stream after the prompt-filter frame: a failure before any chunk", async () => {
  const frame = readFileSync(new URL("./fixtures/prompt-filter-stream.sse", import.meta.url), "utf8").split(
    "\n\n",
  )[0];
  upstream.server.answer = sse(
    `${frame}\n\ndata: {"error":{"code":"server_error","message":"The server had an error."}}\n\n`,
  );
  const { chunks, error } = await drain(provider().stream(call({ stream: true })));
  assert.equal(chunks.length, 0);
  assert.ok(error instanceof UpstreamError);
  assert.equal(error.retryable, true);
});

test("api_version must be a dated version or v1", () => {
  assert.equal(
    azureOpenAIConfig.safeParse({
      type: "azure-openai",
      id: "a",
      base_url: "https://x.openai.azure.com",
      api_version: "latest",
    }).success,
    false,
  );
  assert.equal(
    azureOpenAIConfig.parse({ type: "azure-openai", id: "a", base_url: "https://x.openai.azure.com" })
      .api_version,
    "2024-10-21",
  );
});
