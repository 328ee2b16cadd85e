// Adapter for Azure OpenAI: OpenAI's wire format (the openai-compatible adapter's handling,
// composed, not copied) at Azure's URLs with Azure's key header. What Azure adds: a prompt its
// content filter refuses is a 400 `content_filter` (our content_filter answer, see
// src/errors/upstream.ts), and its streams carry frames with no choices (prompt filter
// annotations), which are not passed on: to a client they are broken chunks.
import { FORWARDED_FIELDS } from "../../domain/chat-request.ts";
import type { Chunk, Completion } from "../../domain/completion.ts";
import { type FieldRules, mapped } from "../field-policy.ts";
import { OpenAICompatibleProvider, type OpenAIEndpoint } from "../openai-compatible/adapter.ts";
import { promptUpperBound } from "../prompt-bound.ts";
import type { EmbeddingCall, EmbeddingResult, KeyState, Provider, UpstreamCall } from "../types.ts";
import type { AzureOpenAIConfig } from "./config.ts";

/** Azure speaks OpenAI's API: every field goes as it is, and Azure answers for what a deployment lacks. */
export const AZURE_RULES = Object.fromEntries(
  FORWARDED_FIELDS.map((field) => [
    field,
    mapped(
      field === "max_tokens" || field === "max_completion_tokens"
        ? "superseded: the reserved output bound, in the field `output_bound_field` chooses"
        : field === "stream_options"
          ? "`include_usage: true` always (the gateway reads the usage); the client's choice is honoured by the gateway"
          : "forwarded as it is",
    ),
  ]),
) as FieldRules;

export function azureEndpoint(apiVersion: string): OpenAIEndpoint {
  return {
    path:
      apiVersion === "v1"
        ? (basePath, _model, operation) => `${basePath}/openai/v1/${operation}`
        : // the deployment name is the model: Azure routes and meters by it
          (basePath, model, operation) =>
            `${basePath}/openai/deployments/${encodeURIComponent(model)}/${operation}?api-version=${encodeURIComponent(apiVersion)}`,
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
  promptBound = promptUpperBound;

  complete(call: UpstreamCall): Promise<Completion> {
    return this.#openai.complete(call);
  }

  async *stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    for await (const chunk of this.#openai.stream(call)) if (chunk.choices.length || chunk.usage) yield chunk;
  }

  /** Azure's embeddings are OpenAI's, at its deployment's path: token ids and base64 included. */
  readonly embedsTokenIds = true;

  embed(call: EmbeddingCall): Promise<EmbeddingResult> {
    return this.#openai.embed(call);
  }

  keyStates(): KeyState[] {
    return this.#openai.keyStates();
  }

  close(): Promise<void> {
    return this.#openai.close();
  }
}
