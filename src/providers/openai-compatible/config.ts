import { z } from "zod";
import { BUILTIN_TOOLS } from "../builtin-tools.ts";
import { httpProviderFields, outputBoundField } from "../config-fields.ts";

export const openaiCompatibleConfig = z
  .object({
    type: z.literal("openai-compatible").describe("any server speaking OpenAI's chat completions API"),
    ...httpProviderFields,
    base_url: httpProviderFields.base_url.describe(
      "the server's base URL, with its /v1 (e.g. http://127.0.0.1:9000/v1); the adapter appends /chat/completions (embedding models: /embeddings)",
    ),
    output_bound_field: z
      .union([z.literal("auto"), outputBoundField])
      .default("auto")
      .describe(
        "the field the reserved output bound is sent in; models may override it. `auto`: the field the client used, and `max_completion_tokens` when it gave none and the upstream is OpenAI's own API (its reasoning models refuse `max_tokens`); other servers get `max_tokens`, which every OpenAI-compatible server accepts.",
      ),
    custom_tools: z
      .enum(["auto", "native", "function"])
      .default("auto")
      .describe(
        "How custom tools (free-form input, e.g. Codex's apply_patch) are sent: `native` as OpenAI's custom tools; `function` as function tools of one string argument, the calls turned back into custom calls, for servers without custom tools; `auto`: native to OpenAI's own API, function to any other server.",
      ),
    responses_builtin_tools: z
      .array(z.enum(BUILTIN_TOOLS))
      .default([])
      .describe(
        "OpenAI's built-in tools (web_search, file_search, …) a Responses API client may use on this upstream, which must then be OpenAI's own Responses API: such a call is sent there natively. Empty (the default): every built-in tool is refused. OpenAI bills their calls per call, outside the tokens the gateway reserves and charges: allowing one is the operator's choice to pay for them (docs/decisions/0019-responses-api.md).",
      ),
    responses_api: z
      .enum(["auto", "native", "translate"])
      .default("auto")
      .describe(
        "Whether Responses API calls go to this upstream's own Responses API ({base_url}/responses), the client's body passed on as it came (fields, tools and items the gateway does not know included), or are translated to chat completions. `auto`: natively to OpenAI's own API, translated for any other server (most have no Responses API).",
      ),
  })
  .strict();

export type OpenAICompatibleConfig = z.output<typeof openaiCompatibleConfig>;
