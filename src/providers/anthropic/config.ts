import { z } from "zod";
import { httpProviderFields } from "../config-fields.ts";

/**
 * The `anthropic-beta` flags a Messages API client's call may forward to this upstream by
 * default: features of Anthropic's own API that Claude Code asks for and an API key may use.
 * Left out: flags that need other credentials (`oauth-…`), server-side tools and files the
 * gateway does not serve, and `context-1m-…`, whose long-context prices an operator should
 * choose to allow. Anthropic-compatible upstreams that refuse flags they do not know
 * (Bedrock- or Vertex-style gateways) get an `allowed_betas` of their own, often `[]`.
 */
export const DEFAULT_ALLOWED_BETAS = [
  "claude-code-20250219",
  "interleaved-thinking-2025-05-14",
  "fine-grained-tool-streaming-2025-05-14",
  "token-efficient-tools-2025-02-19",
  "prompt-caching-2024-07-31",
  "context-management-2025-06-27",
  "output-128k-2025-02-19",
] as const;

export const anthropicConfig = z
  .object({
    type: z.literal("anthropic"),
    ...httpProviderFields,
    /** the adapter appends /v1/messages */
    base_url: httpProviderFields.base_url.default("https://api.anthropic.com"),
    /** drop request fields Anthropic cannot honour instead of refusing the request (docs/providers.md) */
    drop_unsupported: z.boolean().default(false),
    /** the `anthropic-beta` flags of Messages API clients forwarded to this upstream; others are dropped */
    allowed_betas: z
      .array(
        z
          .string()
          .regex(/^[a-z0-9][a-z0-9-]{0,99}$/, "must be a beta flag such as interleaved-thinking-2025-05-14"),
      )
      .default([...DEFAULT_ALLOWED_BETAS]),
  })
  .strict();

export type AnthropicConfig = z.output<typeof anthropicConfig>;
