import { z } from "zod";
import { httpProviderFields } from "../config-fields.ts";

export const anthropicConfig = z
  .object({
    type: z.literal("anthropic"),
    ...httpProviderFields,
    /** the adapter appends /v1/messages */
    base_url: httpProviderFields.base_url.default("https://api.anthropic.com"),
    /** drop request fields Anthropic cannot honour instead of refusing the request (docs/providers.md) */
    drop_unsupported: z.boolean().default(false),
  })
  .strict();

export type AnthropicConfig = z.output<typeof anthropicConfig>;
