// The body of POST /v1/responses (OpenAI's Responses API): what is validated. Fields not listed
// here are dropped; fields the gateway cannot honour are refused by the translation
// (./to-chat.ts), naming them. docs/apis.md lists every field. `null` counts as "not given".
import { z } from "zod";
import { deepest, paramName } from "../../domain/chat-request.ts";
import { ID_MAX_CHARS, ID_PATTERN, ID_RULE } from "../../domain/config-id.ts";
import { GatewayError } from "../../errors/index.ts";
import { typedEntry } from "../known-types.ts";

const opt = <T extends z.ZodType>(schema: T) =>
  schema
    .nullish()
    .transform((v) => v ?? undefined)
    .optional();

const inputText = z.looseObject({ type: z.literal("input_text"), text: z.string() });
const inputImage = z.looseObject({
  type: z.literal("input_image"),
  image_url: opt(z.string().min(1)),
  file_id: opt(z.string()),
  detail: opt(z.string()),
});
const inputFile = z.looseObject({
  type: z.literal("input_file"),
  file_data: opt(z.string()),
  file_id: opt(z.string()),
  file_url: opt(z.string()),
  filename: opt(z.string()),
});
const outputText = z.looseObject({ type: z.literal("output_text"), text: z.string() });
const refusal = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });

const messagePart = z.discriminatedUnion("type", [inputText, inputImage, inputFile, outputText, refusal]);
/** What a tool's output may hold: text, images and files. */
const outputPart = z.discriminatedUnion("type", [inputText, inputImage, inputFile]);

const callId = z.string().min(1).max(512);
const toolName = z.string().min(1).max(128);

const messageItem = z.looseObject({
  type: z.literal("message"),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(messagePart)]),
  id: opt(z.string()),
  status: opt(z.string()),
});
const functionCallItem = z.looseObject({
  type: z.literal("function_call"),
  call_id: callId,
  name: toolName,
  arguments: z.string(),
  /** the namespace tool the function belongs to (./namespaces.ts) */
  namespace: opt(toolName),
  id: opt(z.string()),
  status: opt(z.string()),
});
const customToolCallItem = z.looseObject({
  type: z.literal("custom_tool_call"),
  call_id: callId,
  name: toolName,
  input: z.string(),
  namespace: opt(toolName),
  id: opt(z.string()),
});
const toolOutput = z.union([z.string(), z.array(outputPart)]);
const functionCallOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  call_id: callId,
  output: toolOutput,
  id: opt(z.string()),
});
const customToolCallOutputItem = z.looseObject({
  type: z.literal("custom_tool_call_output"),
  call_id: callId,
  output: toolOutput,
  id: opt(z.string()),
});
const reasoningText = z.looseObject({ type: z.string(), text: z.string() });
const reasoningItem = z.looseObject({
  type: z.literal("reasoning"),
  id: opt(z.string()),
  summary: opt(z.array(reasoningText)),
  content: opt(z.array(reasoningText)),
  encrypted_content: opt(z.string()),
});
const itemReference = z.looseObject({ type: z.literal("item_reference"), id: z.string().min(1).max(128) });

/** Tools made available from this item on (Codex with newer models): `tools` entries of their own. */
const additionalToolsItem = z.looseObject({
  type: z.literal("additional_tools"),
  role: opt(z.string()),
  tools: z.array(z.lazy(() => tool)),
  id: opt(z.string()),
});

/**
 * The input item types the gateway reads. An item of another type (a built-in tool's call,
 * one newer than the gateway) passes natively to an upstream of this API, and is dropped with
 * a notice by a translation (src/providers/passthrough.ts).
 */
const INPUT_ITEMS = {
  message: messageItem,
  function_call: functionCallItem,
  function_call_output: functionCallOutputItem,
  custom_tool_call: customToolCallItem,
  custom_tool_call_output: customToolCallOutputItem,
  reasoning: reasoningItem,
  item_reference: itemReference,
  additional_tools: additionalToolsItem,
};

const inputItem = z.preprocess(
  // OpenAI's "easy" message has no type: a role is enough.
  (item) =>
    item && typeof item === "object" && !Array.isArray(item) && !("type" in item) && "role" in item
      ? { ...item, type: "message" }
      : item,
  typedEntry(INPUT_ITEMS),
);

const functionTool = z.looseObject({
  type: z.literal("function"),
  name: toolName,
  description: opt(z.string()),
  parameters: opt(z.record(z.string(), z.unknown())),
  strict: opt(z.boolean()),
});
const customTool = z.looseObject({
  type: z.literal("custom"),
  name: toolName,
  description: opt(z.string()),
  format: opt(
    z.discriminatedUnion("type", [
      z.looseObject({ type: z.literal("text") }),
      z.looseObject({
        type: z.literal("grammar"),
        syntax: z.enum(["lark", "regex"]),
        definition: z.string(),
      }),
    ]),
  ),
});
/** Function and custom tools grouped under a name their calls carry (Codex's multi_agent_v1). */
const namespaceTool = z.looseObject({
  type: z.literal("namespace"),
  name: toolName,
  description: opt(z.string()),
  tools: z.array(typedEntry({ function: functionTool, custom: customTool })),
});

/**
 * A tool, checked against its type's schema. Of other types (OpenAI's built-in tools: web
 * search, tool search, file search, …, and tools newer than the gateway): left out of the
 * canonical request, passed on natively where the deployment allows them, dropped with a
 * notice elsewhere (src/providers/passthrough.ts).
 */
const tool = typedEntry({ function: functionTool, custom: customTool, namespace: namespaceTool });

const textFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    name: z.string().min(1).max(64),
    schema: z.record(z.string(), z.unknown()),
    description: opt(z.string()),
    strict: opt(z.boolean()),
  }),
]);

export const responsesRequestSchema = z.looseObject({
  model: z
    .string()
    .min(1)
    .max(ID_MAX_CHARS, `must be at most ${ID_MAX_CHARS} characters`)
    .regex(ID_PATTERN, `must be a model id: ${ID_RULE}`),
  input: z.union([z.string(), z.array(inputItem)]),
  instructions: opt(z.string()),
  previous_response_id: opt(z.string().min(1).max(128)),
  stream: opt(z.boolean()),
  store: opt(z.boolean()),
  tools: opt(z.array(tool)),
  tool_choice: opt(
    z.union([
      z.enum(["none", "auto", "required"]),
      z.looseObject({ type: z.string(), name: opt(z.string()) }),
    ]),
  ),
  parallel_tool_calls: opt(z.boolean()),
  max_output_tokens: opt(z.number().int().positive()),
  temperature: opt(z.number().min(0).max(2)),
  top_p: opt(z.number().min(0).max(1)),
  text: opt(z.looseObject({ format: opt(textFormat), verbosity: opt(z.enum(["low", "medium", "high"])) })),
  reasoning: opt(
    z.looseObject({ effort: opt(z.string()), summary: opt(z.string()), generate_summary: opt(z.string()) }),
  ),
  metadata: opt(z.record(z.string().max(64), z.string().max(512))),
  user: opt(z.string()),
  safety_identifier: opt(z.string()),
  prompt_cache_key: opt(z.string()),
  service_tier: opt(z.string()),
  include: opt(z.array(z.string())),
  stream_options: opt(z.looseObject({})),
  truncation: opt(z.enum(["auto", "disabled"])),
  top_logprobs: opt(z.number().int().min(0).max(20)),
  max_tool_calls: opt(z.number().int().positive()),
  background: opt(z.boolean()),
  conversation: opt(z.union([z.string(), z.looseObject({})])),
  prompt: opt(z.looseObject({})),
  context_management: opt(z.array(z.looseObject({}))),
});

export type ResponsesRequest = z.output<typeof responsesRequestSchema>;
export type InputItem = Exclude<ResponsesRequest["input"], string>[number];
export type ResponsesTool = NonNullable<ResponsesRequest["tools"]>[number];
/** An input item of a type the gateway reads. */
export type KnownInputItem = z.output<(typeof INPUT_ITEMS)[keyof typeof INPUT_ITEMS]>;
export type FunctionTool = z.output<typeof functionTool>;
export type CustomTool = z.output<typeof customTool>;
export type NamespaceTool = z.output<typeof namespaceTool>;

export function isKnownItem(item: InputItem): item is KnownInputItem {
  return Object.hasOwn(INPUT_ITEMS, item.type);
}

const UNION_PROBLEMS: Record<string, string> = {
  input: "must be a string or a list of input items",
  tool_choice: "must be none, auto, required or an object naming a tool",
};

function valueAt(body: unknown, path: PropertyKey[]): unknown {
  let value = body;
  for (const key of path) value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
  return value;
}

/** Why the body failed, in words: a missing field, an item type's choices, a union's shapes. */
function problemOf(issue: z.core.$ZodIssue, body: unknown): string {
  if (valueAt(body, issue.path) === undefined) return "is required";
  if (issue.code === "invalid_union") {
    const known = UNION_PROBLEMS[paramName(issue.path)];
    if (known) return known;
  }
  return issue.message;
}

/** Validates a parsed JSON body; throws invalid_request naming the first bad parameter. */
export function parseResponsesRequest(body: unknown): ResponsesRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new GatewayError("invalid_request", { message: "The request body must be a JSON object." });
  const result = responsesRequestSchema.safeParse(body);
  if (result.success) return result.data;
  const issue = deepest(result.error.issues[0]!);
  const param = paramName(issue.path);
  const problem = problemOf(issue, body);
  throw new GatewayError("invalid_request", {
    message: param ? `Invalid parameter '${param}': ${problem}.` : `Invalid request: ${problem}.`,
    param: param || null,
  });
}
