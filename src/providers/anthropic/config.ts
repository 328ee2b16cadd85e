import { z } from "zod";
import { httpProviderFields } from "../config-fields.ts";
import { denyNames } from "../passthrough.ts";

/**
 * What a Messages API client's call never passes to this upstream by default: the `anthropic-beta` flags that need other credentials (`oauth-…`,
 * refused with an API key) and `context-1m-…`, whose long-context prices an operator should
 * choose to allow. Every other flag, field, block and tool passes as the client sent it, so a
 * client's new feature works the day it ships. Anthropic-compatible upstreams that refuse
 * what they do not know (Bedrock- or Vertex-style gateways) get a `deny` of their own.
 */
export const DEFAULT_DENIED = ["oauth-*", "context-1m-*"] as const;

export const anthropicConfig = z
  .object({
    type: z.literal("anthropic").describe("Anthropic's Messages API, or a server speaking it"),
    ...httpProviderFields,
    base_url: httpProviderFields.base_url
      .default("https://api.anthropic.com")
      .describe("the adapter appends /v1/messages"),
    deny: denyNames
      .default([...DEFAULT_DENIED])
      .describe(
        "names never passed natively: fields, block and tool types, and `anthropic-beta` flags (a trailing * matches a prefix)",
      ),
  })
  .strict();

export type AnthropicConfig = z.output<typeof anthropicConfig>;
