import { z } from "zod";
import { httpProviderFields, outputBoundField } from "../config-fields.ts";

export const azureOpenAIConfig = z
  .object({
    type: z.literal("azure-openai").describe("Azure OpenAI's deployments"),
    ...httpProviderFields,
    base_url: httpProviderFields.base_url.describe(
      "the resource's endpoint, e.g. https://my-resource.openai.azure.com",
    ),
    api_version: z
      .string()
      .regex(/^(?:v1|\d{4}-\d{2}-\d{2}(?:-preview)?)$/, "must be a dated version such as 2024-10-21, or v1")
      .default("2024-10-21")
      .describe(
        "A dated version (the GA inference spec is 2024-10-21) is sent as ?api-version= to /openai/deployments/{upstream_model}/chat/completions; `v1` calls /openai/v1/chat/completions with the model in the body.",
      ),
    output_bound_field: z
      .union([z.literal("auto"), outputBoundField])
      .default("auto")
      .describe("as for openai-compatible providers"),
  })
  .strict();

export type AzureOpenAIConfig = z.output<typeof azureOpenAIConfig>;
