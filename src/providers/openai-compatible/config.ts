import { z } from "zod";
import { httpProviderFields, outputBoundField } from "../config-fields.ts";

export const openaiCompatibleConfig = z
  .object({
    type: z.literal("openai-compatible"),
    ...httpProviderFields,
    /** the field the reserved output bound is sent in; models may override it (see config-fields.ts) */
    output_bound_field: z.union([z.literal("auto"), outputBoundField]).default("auto"),
  })
  .strict();

export type OpenAICompatibleConfig = z.output<typeof openaiCompatibleConfig>;
