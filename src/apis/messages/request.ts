// The body of POST /v1/messages (Anthropic's Messages API): validated as strictly as
// Anthropic does (unknown fields and block types are refused, `max_tokens` is required), and
// translated into the canonical request every upstream can be sent. The body itself travels
// beside it, for Anthropic upstreams, which get it natively (./api.ts).
import { z } from "zod";
import { ID_MAX_CHARS, ID_PATTERN, ID_RULE } from "../../config/id.ts";
import { GatewayError } from "../../errors/index.ts";
import { EFFORT_SHARE } from "../../providers/translate.ts";
import type { ChatRequest } from "../chat-completions/request.ts";

const cacheControl = z.strictObject({ type: z.literal("ephemeral"), ttl: z.enum(["5m", "1h"]).optional() });
const withCache = { cache_control: cacheControl.nullish() };

const textBlock = z.strictObject({ type: z.literal("text"), text: z.string().min(1), ...withCache });
const imageBlock = z.strictObject({
  type: z.literal("image"),
  source: z.discriminatedUnion("type", [
    z.strictObject({
      type: z.literal("base64"),
      media_type: z.enum(["image/jpeg", "image/png", "image/gif", "image/webp"]),
      data: z.string().min(1),
    }),
    z.strictObject({ type: z.literal("url"), url: z.url({ protocol: /^https?$/ }) }),
  ]),
  ...withCache,
});
const toolUseBlock = z.strictObject({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  ...withCache,
});
const toolResultBlock = z.strictObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [textBlock, imageBlock]))]).optional(),
  is_error: z.boolean().optional(),
  ...withCache,
});
const thinkingBlock = z.strictObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string(),
});
const redactedThinkingBlock = z.strictObject({
  type: z.literal("redacted_thinking"),
  data: z.string().min(1),
});

/** The block types a message may carry here; the rest of Anthropic's (documents, server tools) are refused. */
export const BLOCK_TYPES = [
  "text",
  "image",
  "tool_use",
  "tool_result",
  "thinking",
  "redacted_thinking",
] as const;

const block = z.discriminatedUnion("type", [
  textBlock,
  imageBlock,
  toolUseBlock,
  toolResultBlock,
  thinkingBlock,
  redactedThinkingBlock,
]);

const message = z.strictObject({
  role: z.enum(["user", "assistant"]),
  content: z.union([z.string(), z.array(block).min(1)]),
});

/** A client tool; Anthropic's server tools (a `type` other than custom) are not served. */
const tool = z.strictObject({
  type: z.literal("custom").nullish(),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, "must be 1 to 128 letters, digits, _ or -"),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal("object") }),
  strict: z.boolean().optional(),
  ...withCache,
});

const parallel = { disable_parallel_tool_use: z.boolean().optional() };
const toolChoice = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("auto"), ...parallel }),
  z.strictObject({ type: z.literal("any"), ...parallel }),
  z.strictObject({ type: z.literal("tool"), name: z.string().min(1), ...parallel }),
  z.strictObject({ type: z.literal("none") }),
]);

const display = { display: z.enum(["summarized", "omitted"]).nullish() };
const thinking = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024), ...display }),
  z.strictObject({ type: z.literal("adaptive"), ...display }),
  z.strictObject({ type: z.literal("disabled") }),
]);

export const messagesRequestSchema = z.strictObject({
  model: z
    .string()
    .min(1)
    .max(ID_MAX_CHARS, `must be at most ${ID_MAX_CHARS} characters`)
    .regex(ID_PATTERN, `must be a model id: ${ID_RULE}`),
  messages: z.array(message).min(1),
  max_tokens: z.number().int().min(1),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  stop_sequences: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  stream: z.boolean().optional(),
  metadata: z.strictObject({ user_id: z.string().max(256).nullish() }).optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  service_tier: z.enum(["auto", "standard_only"]).optional(),
  /** Anthropic's context editing (beta `context-management-2025-06-27`): native upstreams only */
  context_management: z.looseObject({}).optional(),
});

export type MessagesRequest = z.output<typeof messagesRequestSchema>;
type Block = z.output<typeof block>;

/** POST /v1/messages/count_tokens takes the same fields, but for those of the answer. */
export const countTokensSchema = messagesRequestSchema
  .omit({
    max_tokens: true,
    stop_sequences: true,
    temperature: true,
    top_p: true,
    top_k: true,
    stream: true,
    metadata: true,
    service_tier: true,
  })
  .strict();

/** Anthropic's way of naming a field: `messages.0.content.1.type`. */
function pathOf(path: PropertyKey[]): string {
  return path.map(String).join(".");
}

/** The branch of a union that got furthest says what is wrong, with its full path. */
function deepest(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union" || !issue.errors.length) return issue;
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors)
    for (const inner of branch) {
      const candidate = deepest({ ...inner, path: [...issue.path, ...inner.path] });
      if (!best || candidate.path.length > best.path.length) best = candidate;
    }
  return best && best.path.length > issue.path.length ? best : issue;
}

function problemOf(issue: z.core.$ZodIssue): { path: PropertyKey[]; problem: string } {
  if (issue.code === "unrecognized_keys")
    return { path: [...issue.path, issue.keys[0]!], problem: "Extra inputs are not permitted" };
  if (issue.code === "invalid_union" && "options" in issue && Array.isArray(issue.options)) {
    const tags = (issue.options as unknown[]).map((t) => `'${String(t)}'`).join(", ");
    // a content block of a type Anthropic has but the gateway does not serve says so
    const blocks = issue.path.at(-3) === "content" || issue.path.at(-2) === "content";
    return {
      path: issue.path,
      problem: `Input tag does not match any of the expected tags: ${tags}${blocks ? " (other block types are not served by this gateway)" : ""}`,
    };
  }
  if (issue.code === "invalid_type" && issue.message.endsWith("received undefined"))
    return { path: issue.path, problem: "Field required" };
  return { path: issue.path, problem: issue.message };
}

/** Validates a parsed JSON body with `schema`; throws invalid_request naming the first bad field. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new GatewayError("invalid_request", { message: "The request body must be a JSON object." });
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const { path, problem } = problemOf(deepest(result.error.issues[0]!));
  const param = pathOf(path);
  throw new GatewayError("invalid_request", {
    message: param ? `${param}: ${problem}` : problem,
    param: param || null,
  });
}

/** Checks Anthropic makes of a valid body beyond its shape. */
export function checkMessages(req: MessagesRequest): void {
  if (req.thinking?.type === "enabled" && req.thinking.budget_tokens >= req.max_tokens)
    throw new GatewayError("invalid_request", {
      message: "`max_tokens` must be greater than `thinking.budget_tokens`.",
      param: "thinking.budget_tokens",
    });
  const choice = req.tool_choice;
  if (choice?.type === "tool" && !req.tools?.some((t) => t.name === choice.name))
    throw new GatewayError("invalid_request", {
      message: `tool_choice.name: no tool is named '${choice.name.slice(0, 128)}'.`,
      param: "tool_choice.name",
    });
  req.messages.forEach((m, i) => {
    if (m.content === "" && !(m.role === "assistant" && i === req.messages.length - 1))
      throw new GatewayError("invalid_request", {
        message: `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
        param: `messages.${i}.content`,
      });
  });
}

type CanonicalMessage = ChatRequest["messages"][number];
type Part = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

function imagePart(b: Extract<Block, { type: "image" }>): Part {
  const s = b.source;
  return {
    type: "image_url",
    image_url: { url: s.type === "url" ? s.url : `data:${s.media_type};base64,${s.data}` },
  };
}

/** Text only: a string, as every upstream takes it; with images: parts. */
function content(parts: Part[]): string | Part[] {
  return parts.every((p) => p.type === "text") ? parts.map((p) => p.text).join("\n") : parts;
}

function toolResultContent(b: Extract<Block, { type: "tool_result" }>): string | Part[] {
  if (b.content === undefined || typeof b.content === "string") return b.content ?? "";
  return content(b.content.map((c) => (c.type === "text" ? { type: "text", text: c.text } : imagePart(c))));
}

/** One Anthropic turn as canonical messages: tool results become tool messages, ahead of the rest. */
function turn(m: MessagesRequest["messages"][number]): CanonicalMessage[] {
  if (typeof m.content === "string") return [{ role: m.role, content: m.content }];
  if (m.role === "assistant") {
    let text = "";
    const toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
    for (const b of m.content) {
      if (b.type === "text") text += b.text;
      else if (b.type === "tool_use")
        toolCalls.push({
          id: b.id,
          type: "function",
          function: { name: b.name, arguments: JSON.stringify(b.input) },
        });
      // thinking and redacted thinking are Anthropic's own: no other upstream reads them back
    }
    return [
      {
        role: "assistant",
        content: text || (toolCalls.length ? null : ""),
        ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
      },
    ];
  }
  const out: CanonicalMessage[] = [];
  const parts: Part[] = [];
  for (const b of m.content) {
    if (b.type === "tool_result")
      out.push({ role: "tool", tool_call_id: b.tool_use_id, content: toolResultContent(b) });
    else if (b.type === "text") parts.push({ type: "text", text: b.text });
    else if (b.type === "image") parts.push(imagePart(b));
    // a user turn carries no thinking; Anthropic refuses it there, and so does the translation
    else
      throw new GatewayError("invalid_request", {
        message: `A block of type '${b.type}' belongs to an assistant turn.`,
        param: "messages",
      });
  }
  if (parts.length) out.push({ role: "user", content: content(parts) });
  return out;
}

/** The reasoning effort whose share of the output bound covers the thinking budget asked for. */
function effortFor(budget: number, maxTokens: number): string {
  const share = budget / maxTokens;
  for (const effort of ["low", "medium", "high"]) if (share <= EFFORT_SHARE[effort]!) return effort;
  return "high";
}

/**
 * The canonical request: Anthropic's fields as chat completions has them (docs/apis.md).
 * `top_k`, `service_tier`, `context_management`, cache markers, thinking blocks and
 * `is_error` have no place there: only Anthropic upstreams, which get the body itself, see them.
 */
export function canonicalRequest(req: MessagesRequest): ChatRequest {
  const messages: CanonicalMessage[] = [];
  if (req.system !== undefined) {
    const text = typeof req.system === "string" ? req.system : req.system.map((b) => b.text).join("\n");
    if (text) messages.push({ role: "system", content: text });
  }
  for (const m of req.messages) messages.push(...turn(m));
  const out: ChatRequest = { model: req.model, messages, max_tokens: req.max_tokens };
  if (req.stream) out.stream = true;
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (req.stop_sequences?.length) out.stop = req.stop_sequences;
  if (req.metadata?.user_id) out.user = req.metadata.user_id;
  if (req.tools?.length)
    out.tools = req.tools.map((t) => ({
      type: "function",
      function: {
        name: t.name,
        ...(t.description === undefined ? {} : { description: t.description }),
        parameters: t.input_schema,
        ...(t.strict === undefined ? {} : { strict: t.strict }),
      },
    }));
  const choice = req.tool_choice;
  if (choice) {
    out.tool_choice =
      choice.type === "tool"
        ? { type: "function", function: { name: choice.name } }
        : choice.type === "any"
          ? "required"
          : choice.type;
    if (choice.type !== "none" && choice.disable_parallel_tool_use) out.parallel_tool_calls = false;
  }
  if (req.thinking?.type === "enabled")
    out.reasoning_effort = effortFor(req.thinking.budget_tokens, req.max_tokens);
  return out;
}
