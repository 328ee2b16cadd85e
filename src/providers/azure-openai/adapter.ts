// Adapter for Azure OpenAI: OpenAI's wire format (the openai-compatible adapter's handling,
// composed, not copied) at Azure's URLs with Azure's key header. What Azure adds: a prompt its
// content filter refuses is a 400 `content_filter` (our content_filter answer, see
// src/errors/upstream.ts), and its streams carry frames with no choices (prompt filter
// annotations), which are not passed on: to a client they are broken chunks.
import { OpenAICompatibleProvider, type OpenAIEndpoint } from "../openai-compatible/adapter.ts";
import { estimatedPromptBound } from "../prompt-bound.ts";
import type { Chunk, Completion, Provider, UpstreamCall } from "../types.ts";
import type { AzureOpenAIConfig } from "./config.ts";

export function azureEndpoint(apiVersion: string): OpenAIEndpoint {
  return {
    path:
      apiVersion === "v1"
        ? (basePath) => `${basePath}/openai/v1/chat/completions`
        : // the deployment name is the model: Azure routes and meters by it
          (basePath, call) =>
            `${basePath}/openai/deployments/${encodeURIComponent(call.upstreamModel)}/chat/completions?api-version=${encodeURIComponent(apiVersion)}`,
    auth: (key) => ({ "api-key": key }),
  };
}

export class AzureOpenAIProvider implements Provider {
  readonly id: string;
  readonly #openai: OpenAICompatibleProvider;

  constructor(config: AzureOpenAIConfig, env: Record<string, string | undefined>) {
    this.id = config.id;
    this.#openai = new OpenAICompatibleProvider(config, env, azureEndpoint(config.api_version));
  }

  /** Azure runs OpenAI's models with OpenAI's templates: it adds nothing to the shared bound. */
  promptBound = estimatedPromptBound;

  complete(call: UpstreamCall): Promise<Completion> {
    return this.#openai.complete(call);
  }

  async *stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    for await (const chunk of this.#openai.stream(call)) if (chunk.choices.length || chunk.usage) yield chunk;
  }

  close(): Promise<void> {
    return this.#openai.close();
  }
}
