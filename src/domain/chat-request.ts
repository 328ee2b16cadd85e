// The canonical request every client API is translated to and every provider adapter reads:
// chat completions' own body (POST /v1/chat/completions), what is validated, and which fields
// are forwarded. Fields not listed here go on only to OpenAI-compatible upstreams, as they came;
// the others drop them with a notice (src/providers/passthrough.ts).
// `null` counts as "not given" for every optional field, as many clients send it that way.
import { z } from "zod";
import { GatewayError } from "../errors/index.ts";
import { ID_MAX_CHARS, ID_PATTERN, ID_RULE } from "./config-id.ts";

/** The content part types OpenAI documents; a part of another type, or missing its payload, is refused. */
const contentPart = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text"), text: z.string() }),
  z.looseObject({ type: z.literal("image_url"), image_url: z.looseObject({ url: z.string().min(1) }) }),
  z.looseObject({
    type: z.literal("input_audio"),
    input_audio: z.looseObject({ data: z.string(), format: z.string() }),
  }),
  z.looseObject({ type: z.literal("file"), file: z.looseObject({}) }),
  z.looseObject({ type: z.literal("refusal"), refusal: z.string() }),
]);
const content = z.union([z.string(), z.array(contentPart).min(1)]);

/** A function call, or a call of a custom (free-form input) tool: OpenAI's two tool-call shapes. */
const toolCall = z.union([
  z.looseObject({
    id: z.string(),
    type: z.literal("custom"),
    custom: z.looseObject({ name: z.string(), input: z.string() }),
  }),
  z.looseObject({
    id: z.string(),
    type: z.string(),
    function: z.looseObject({ name: z.string(), arguments: z.string() }),
  }),
]);

const message = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("system"), content, name: z.string().nullish() }),
  z.looseObject({ role: z.literal("developer"), content, name: z.string().nullish() }),
  z.looseObject({ role: z.literal("user"), content, name: z.string().nullish() }),
  z.looseObject({
    role: z.literal("assistant"),
    content: content.nullish(),
    name: z.string().nullish(),
    tool_calls: z.array(toolCall).nullish(),
  }),
  z.looseObject({ role: z.literal("tool"), content, tool_call_id: z.string() }),
  z.looseObject({ role: z.literal("function"), content: z.string().nullable(), name: z.string() }),
]);

const opt = <T extends z.ZodType>(schema: T) =>
  schema
    .nullish()
    .transform((v) => v ?? undefined)
    .optional();

/** Fields forwarded to OpenAI-compatible upstreams as they are, when present. */
export const FORWARDED_FIELDS = [
  "temperature",
  "top_p",
  "max_tokens",
  "max_completion_tokens",
  "n",
  "stop",
  "seed",
  "user",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "response_format",
  "presence_penalty",
  "frequency_penalty",
  "logit_bias",
  "logprobs",
  "top_logprobs",
  "stream_options",
  "reasoning_effort",
  "modalities",
  "audio",
  "prediction",
  "metadata",
  "store",
  "service_tier",
  "verbosity",
  "web_search_options",
  "prompt_cache_key",
  "safety_identifier",
  "functions",
  "function_call",
] as const;

export const chatRequestSchema = z.object({
  // Model ids are configuration ids: bounded, so a `model` string cannot fill records or
  // error messages (a 900 KB one used to be stored and echoed whole).
  model: z
    .string()
    .min(1)
    .max(ID_MAX_CHARS, `must be at most ${ID_MAX_CHARS} characters`)
    .regex(ID_PATTERN, `must be a model id: ${ID_RULE}`),
  messages: z.array(message).min(1),
  stream: opt(z.boolean()),
  temperature: opt(z.number().min(0).max(2)),
  top_p: opt(z.number().min(0).max(1)),
  max_tokens: opt(z.number().int().positive()),
  max_completion_tokens: opt(z.number().int().positive()),
  n: opt(z.number().int().min(1).max(128)),
  stop: opt(z.union([z.string(), z.array(z.string()).max(4)])),
  seed: opt(z.number().int()),
  user: opt(z.string()),
  tools: opt(z.array(z.looseObject({ type: z.string() }))),
  tool_choice: opt(z.union([z.string(), z.looseObject({ type: z.string() })])),
  parallel_tool_calls: opt(z.boolean()),
  response_format: opt(z.looseObject({ type: z.string() })),
  presence_penalty: opt(z.number().min(-2).max(2)),
  frequency_penalty: opt(z.number().min(-2).max(2)),
  logit_bias: opt(z.record(z.string(), z.number().min(-100).max(100))),
  logprobs: opt(z.boolean()),
  top_logprobs: opt(z.number().int().min(0).max(20)),
  stream_options: opt(z.looseObject({ include_usage: z.boolean().nullish() })),
  reasoning_effort: opt(z.string()),
  modalities: opt(z.array(z.string())),
  audio: opt(z.looseObject({})),
  prediction: opt(z.looseObject({})),
  metadata: opt(z.record(z.string(), z.string())),
  store: opt(z.boolean()),
  service_tier: opt(z.string()),
  verbosity: opt(z.string()),
  web_search_options: opt(z.looseObject({})),
  prompt_cache_key: opt(z.string()),
  safety_identifier: opt(z.string()),
  functions: opt(z.array(z.looseObject({}))),
  function_call: opt(z.union([z.string(), z.looseObject({})])),
});

export type ChatRequest = z.output<typeof chatRequestSchema>;

export function paramName(path: PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${String(p)}` : String(p))).join("");
}

/**
 * A union's own issue says only "Invalid input" at the union; the branch that got furthest
 * (content given as parts: the bad part) says what is wrong, with its full path.
 */
export function deepest(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union" || !issue.errors.length) return issue;
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors)
    for (const inner of branch) {
      const candidate = deepest({ ...inner, path: [...issue.path, ...inner.path] });
      if (!best || candidate.path.length > best.path.length) best = candidate;
    }
  return best && best.path.length > issue.path.length ? best : issue;
}

/** Validates a parsed JSON body; throws invalid_request naming the first bad parameter. */
export function parseChatRequest(body: unknown): ChatRequest {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new GatewayError("invalid_request", { message: "The request body must be a JSON object." });
  const result = chatRequestSchema.safeParse(body);
  if (result.success) {
    const req = result.data;
    if (req.stream_options && !req.stream)
      throw new GatewayError("invalid_request", {
        message: "stream_options is only allowed when stream is true.",
        param: "stream_options",
      });
    return req;
  }
  const issue = deepest(result.error.issues[0]!);
  const param = paramName(issue.path);
  const problem =
    issue.code === "invalid_union" && issue.path.at(-1) === "role"
      ? "must be one of system, developer, user, assistant, tool, function"
      : issue.message;
  throw new GatewayError("invalid_request", {
    message: param ? `Invalid parameter '${param}': ${problem}.` : `Invalid request: ${problem}.`,
    param: param || null,
  });
}
