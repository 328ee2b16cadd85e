import { z } from "zod";
import { httpProviderFields } from "../config-fields.ts";

export const openaiCompatibleConfig = z
  .object({ type: z.literal("openai-compatible"), ...httpProviderFields })
  .strict();

export type OpenAICompatibleConfig = z.output<typeof openaiCompatibleConfig>;
