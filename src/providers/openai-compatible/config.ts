import { z } from "zod";
import { httpProviderFields, outputBoundField } from "../config-fields.ts";

export const openaiCompatibleConfig = z
  .object({
    type: z.literal("openai-compatible"),
    ...httpProviderFields,
    /** the field the reserved output bound is sent in; models may override it (see config-fields.ts) */
    output_bound_field: z.union([z.literal("auto"), outputBoundField]).default("auto"),
    /**
     * How custom tools (free-form input, e.g. Codex's apply_patch) are sent: `native` as
     * OpenAI's custom tools; `function` as function tools of one string argument, the calls
     * turned back into custom calls (../custom-tools.ts), for servers without custom tools;
     * `auto`: native to OpenAI's own API, function to any other server.
     */
    custom_tools: z.enum(["auto", "native", "function"]).default("auto"),
  })
  .strict();

export type OpenAICompatibleConfig = z.output<typeof openaiCompatibleConfig>;
