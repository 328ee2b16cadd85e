import { z } from "zod";
import { BUILTIN_TOOLS } from "../builtin-tools.ts";
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
    /**
     * OpenAI's built-in tools (web_search, file_search, …) a Responses API client may use on
     * this upstream, which must then be OpenAI's own Responses API: such a call is sent there
     * natively. Empty (the default): every built-in tool is refused. OpenAI bills their calls
     * per call, outside the tokens the gateway reserves and charges: allowing one is the
     * operator's choice to pay for them (docs/decisions/0019-responses-api.md).
     */
    responses_builtin_tools: z.array(z.enum(BUILTIN_TOOLS)).default([]),
    /**
     * Whether Responses API calls go to this upstream's own Responses API ({base_url}/responses),
     * the client's body passed on as it came (fields, tools and items the gateway does not know
     * included), or are translated to chat completions. `auto`: natively to OpenAI's own API,
     * translated for any other server (most have no Responses API).
     */
    responses_api: z.enum(["auto", "native", "translate"]).default("auto"),
  })
  .strict();

export type OpenAICompatibleConfig = z.output<typeof openaiCompatibleConfig>;
