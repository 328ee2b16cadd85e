import { z } from "zod";
import { httpProviderFields } from "../config-fields.ts";

export const geminiConfig = z
  .object({
    type: z.literal("gemini").describe("Google's Gemini API"),
    ...httpProviderFields,
    base_url: httpProviderFields.base_url
      .default("https://generativelanguage.googleapis.com")
      .describe(
        "the adapter appends /v1beta/models/{model}:generateContent (or :streamGenerateContent?alt=sse; embedding models: :embedContent and :batchEmbedContents)",
      ),
  })
  .strict();

export type GeminiConfig = z.output<typeof geminiConfig>;
