// The body of POST /v1/messages (Anthropic's Messages API): what the gateway reads of it is
// validated as Anthropic does (`max_tokens` is required, types and bounds are checked), and
// translated into the canonical request every upstream can be sent. What it does not read
// (fields, blocks and tools newer than it, server tools, documents) is kept: the body itself
// travels beside the canonical request, for Anthropic upstreams, which get it natively, and
// the rest is listed as untranslated, for the others to drop with a notice
// (src/providers/passthrough.ts).
import { z } from "zod";
import { type ChatRequest, deepest } from "../../domain/chat-request.ts";
import { ID_MAX_CHARS, ID_PATTERN, ID_RULE } from "../../domain/config-id.ts";
import { GatewayError } from "../../errors/index.ts";
import type { Untranslated } from "../../providers/passthrough.ts";
import { EFFORT_SHARE } from "../../providers/translate.ts";
import { typedEntry } from "../known-types.ts";

// Parsed loosely, as the API will be tomorrow: fields inside a known block or tool that the
// gateway does not read pass with it (citations, `eager_input_streaming`, …), and so do
// blocks, tools and top-level fields of kinds it does not know; what it reads is still
// checked as strictly as Anthropic checks it.
const cacheControl = z.looseObject({ type: z.string().min(1), ttl: z.string().optional() });
const withCache = { cache_control: cacheControl.nullish() };

const textBlock = z.looseObject({ type: z.literal("text"), text: z.string().min(1), ...withCache });
const imageBlock = z.looseObject({
  type: z.literal("image"),
  source: z.discriminatedUnion("type", [
    z.looseObject({
      type: z.literal("base64"),
      media_type: z.enum(["image/jpeg", "image/png", "image/gif", "image/webp"]),
      data: z.string().min(1),
    }),
    // which URLs may go upstream is one rule for every API (../media-urls.ts)
    z.looseObject({ type: z.literal("url"), url: z.string().min(1).max(8192) }),
  ]),
  ...withCache,
});
const toolUseBlock = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  ...withCache,
});
/** A tool result's parts: text and images, or blocks of kinds the gateway does not translate. */
const resultPart = typedEntry({ text: textBlock, image: imageBlock });
const toolResultBlock = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(resultPart)]).optional(),
  is_error: z.boolean().optional(),
  ...withCache,
});
const thinkingBlock = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string(),
});
const redactedThinkingBlock = z.looseObject({
  type: z.literal("redacted_thinking"),
  data: z.string().min(1),
});

/** The block types the gateway reads; a block of another type passes as it is (../known-types.ts). */
const KNOWN_BLOCKS = {
  text: textBlock,
  image: imageBlock,
  tool_use: toolUseBlock,
  tool_result: toolResultBlock,
  thinking: thinkingBlock,
  redacted_thinking: redactedThinkingBlock,
} as const;

const block = typedEntry(KNOWN_BLOCKS);

const message = z.looseObject({
  // `system` mid-conversation: Claude Code's beta mid-conversation-system-2026-04-07
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(block).min(1)]),
});

/** A client tool: `custom`, or no type. */
const customTool = z.looseObject({
  type: z.literal("custom").nullish(),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, "must be 1 to 128 letters, digits, _ or -"),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal("object") }),
  strict: z.boolean().optional(),
  ...withCache,
});
/** A tool: a client tool checked as such, or one of Anthropic's server tools, passed on as it is. */
const tool = z.looseObject({ type: z.string().min(1).max(128).nullish() }).transform((t, ctx) => {
  if (t.type === undefined || t.type === null || t.type === "custom") {
    const checked = customTool.safeParse(t);
    if (checked.success) return { ...checked.data, server: false as const };
    for (const issue of checked.error.issues) ctx.addIssue(issue as z.core.$ZodRawIssue);
    return z.NEVER;
  }
  return { ...t, type: t.type, server: true as const };
});

const parallel = { disable_parallel_tool_use: z.boolean().optional() };
const toolChoice = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("auto"), ...parallel }),
  z.looseObject({ type: z.literal("any"), ...parallel }),
  z.looseObject({ type: z.literal("tool"), name: z.string().min(1), ...parallel }),
  z.looseObject({ type: z.literal("none") }),
]);

const display = { display: z.string().nullish() };
const thinking = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024), ...display }),
  z.looseObject({ type: z.literal("adaptive"), ...display }),
  z.looseObject({ type: z.literal("disabled") }),
]);

/** Structured output (`format`) and how hard the model works (`effort`, beta effort-2025-11-24). */
const outputConfig = z.looseObject({
  effort: z.string().min(1).max(32).nullish(),
  format: z
    .looseObject({ type: z.string().min(1), schema: z.record(z.string(), z.unknown()).optional() })
    .nullish(),
});

export const messagesRequestSchema = z.looseObject({
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
  // Claude Code puts a JSON document here (its device, account and session ids)
  metadata: z.looseObject({ user_id: z.string().max(1024).nullish() }).optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  service_tier: z.string().min(1).max(64).optional(),
  output_config: outputConfig.optional(),
  /** Anthropic's context editing (beta `context-management-2025-06-27`): native upstreams only */
  context_management: z.looseObject({}).optional(),
});

/** The top-level fields the gateway reads; a body's others pass natively (or are dropped with a notice). */
const KNOWN_FIELDS: ReadonlySet<string> = new Set(Object.keys(messagesRequestSchema.shape));

export type MessagesRequest = z.output<typeof messagesRequestSchema>;
type Block = z.output<typeof block>;

/** POST /v1/messages/count_tokens takes the same fields, but for those of the answer. */
export const countTokensSchema = messagesRequestSchema.omit({
  max_tokens: true,
  stop_sequences: true,
  temperature: true,
  top_p: true,
  top_k: true,
  stream: true,
  metadata: true,
  service_tier: true,
});

/** Anthropic's way of naming a field: `messages.0.content.1.type`. */
function pathOf(path: PropertyKey[]): string {
  return path.map(String).join(".");
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
  if (choice?.type === "tool" && !req.tools?.some((t) => (t as { name?: unknown }).name === choice.name))
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
type Part =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } }
  | { type: "file"; file: { file_data: string; filename?: string } };
type Known = Extract<Block, { type: keyof typeof KNOWN_BLOCKS }>;
type Other = { type: string; [k: string]: unknown };

/** Notes what the canonical request cannot carry, by its place in the client's body. */
class Untranslatable {
  readonly list: Untranslated[] = [];
  add(path: PropertyKey[], name: string, capability?: string): void {
    this.list.push({ param: pathOf(path), name, ...(capability ? { capability } : {}) });
  }
}

/** The capability class Claude Code's fallbacks key on for a block it can send without (errors.ts). */
const BLOCK_CAPABILITY: Readonly<Record<string, string>> = {
  document: "document_block",
  image: "image_block",
};

function imagePart(b: Extract<Known, { type: "image" }>): Part {
  const s = b.source;
  return {
    type: "image_url",
    image_url: { url: s.type === "url" ? s.url : `data:${s.media_type};base64,${s.data}` },
  };
}

const isText = (v: unknown): v is string => typeof v === "string";

/**
 * A block the gateway does not read that has a counterpart all the same: a document's text or
 * PDF, a search result's text. Undefined when it has none.
 */
function otherPart(b: Other): Part | undefined {
  const source = b.source as Record<string, unknown> | undefined;
  if (b.type === "document" && source) {
    if (source.type === "text" && isText(source.data)) return { type: "text", text: source.data };
    if (source.type === "base64" && source.media_type === "application/pdf" && isText(source.data))
      return {
        type: "file",
        file: {
          file_data: `data:application/pdf;base64,${source.data}`,
          ...(isText(b.title) ? { filename: b.title } : {}),
        },
      };
    if (source.type === "content" && Array.isArray(source.content)) {
      const text = (source.content as Other[])
        .filter((c) => c?.type === "text" && isText(c.text))
        .map((c) => c.text as string)
        .join("\n");
      if (text) return { type: "text", text };
    }
  }
  if (b.type === "search_result" && Array.isArray(b.content)) {
    const text = (b.content as Other[])
      .filter((c) => c?.type === "text" && isText(c.text))
      .map((c) => c.text as string)
      .join("\n");
    const head = [b.title, b.source].filter(isText).join(" — ");
    if (text) return { type: "text", text: head ? `${head}\n${text}` : text };
  }
  return undefined;
}

/** Text only: a string, as every upstream takes it; with images or files: parts. */
function content(parts: Part[]): string | Part[] {
  return parts.every((p) => p.type === "text") ? parts.map((p) => p.text).join("\n") : parts;
}

/** A block's part, or undefined (noted) when it has none. */
function partOf(b: Block, path: PropertyKey[], notes: Untranslatable): Part | undefined {
  if (b.type === "text") return { type: "text", text: (b as Extract<Known, { type: "text" }>).text };
  if (b.type === "image") return imagePart(b as Extract<Known, { type: "image" }>);
  const part = otherPart(b as Other);
  if (!part) notes.add(path, b.type, BLOCK_CAPABILITY[b.type]);
  return part;
}

function toolResultContent(
  b: Extract<Known, { type: "tool_result" }>,
  path: PropertyKey[],
  notes: Untranslatable,
): string | Part[] {
  if (b.content === undefined || typeof b.content === "string") return b.content ?? "";
  return content(b.content.flatMap((c, i) => partOf(c as Block, [...path, "content", i], notes) ?? []));
}

/** The text of a system turn (mid-conversation: Claude Code's beta), its other blocks noted. */
function systemText(
  m: MessagesRequest["messages"][number],
  path: PropertyKey[],
  notes: Untranslatable,
): string {
  if (typeof m.content === "string") return m.content;
  return m.content
    .flatMap((b, j) => {
      if (b.type === "text") return [(b as Extract<Known, { type: "text" }>).text];
      notes.add([...path, "content", j], b.type);
      return [];
    })
    .join("\n");
}

/** One Anthropic turn as canonical messages: tool results become tool messages, ahead of the rest. */
function turn(m: MessagesRequest["messages"][number], i: number, notes: Untranslatable): CanonicalMessage[] {
  const path = ["messages", i];
  if (m.role === "system") return [{ role: "system", content: systemText(m, path, notes) }];
  if (typeof m.content === "string") return [{ role: m.role, content: m.content }];
  if (m.role === "assistant") {
    let text = "";
    const toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[] = [];
    m.content.forEach((b, j) => {
      if (b.type === "text") text += (b as Extract<Known, { type: "text" }>).text;
      else if (b.type === "tool_use") {
        const use = b as Extract<Known, { type: "tool_use" }>;
        toolCalls.push({
          id: use.id,
          type: "function",
          function: { name: use.name, arguments: JSON.stringify(use.input) },
        });
      }
      // thinking and redacted thinking are Anthropic's own: no other upstream reads them back
      else if (b.type !== "thinking" && b.type !== "redacted_thinking")
        notes.add([...path, "content", j], b.type);
    });
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
  m.content.forEach((b, j) => {
    const at = [...path, "content", j];
    if (b.type === "tool_result") {
      const result = b as Extract<Known, { type: "tool_result" }>;
      out.push({
        role: "tool",
        tool_call_id: result.tool_use_id,
        content: toolResultContent(result, at, notes),
      });
    } else if (b.type === "thinking" || b.type === "redacted_thinking" || b.type === "tool_use")
      // a user turn carries none of these; Anthropic refuses them there, and so does the translation
      throw new GatewayError("invalid_request", {
        message: `A block of type '${b.type}' belongs to an assistant turn.`,
        param: pathOf(at),
      });
    else {
      const part = partOf(b, at, notes);
      if (part) parts.push(part);
    }
  });
  if (parts.length)
    out.push({ role: "user", content: content(parts) as CanonicalMessage["content"] } as CanonicalMessage);
  return out;
}

/** The reasoning effort whose share of the output bound covers the thinking budget asked for. */
function effortFor(budget: number, maxTokens: number): string {
  const share = budget / maxTokens;
  for (const effort of ["low", "medium", "high"]) if (share <= EFFORT_SHARE[effort]!) return effort;
  return "high";
}

/** Claude's effort levels as reasoning efforts: `max` is the highest there is. */
const EFFORTS: Readonly<Record<string, string>> = { low: "low", medium: "medium", high: "high", max: "high" };

/**
 * The reasoning the request asks for, as a reasoning effort: a thinking budget's share of the
 * output bound, or the effort asked (`output_config.effort`, which adaptive thinking follows).
 * Translated only to a model that reasons (src/providers/capabilities.ts).
 */
function reasoningEffort(req: MessagesRequest, notes: Untranslatable): string | undefined {
  const thinking = req.thinking;
  const effort = req.output_config?.effort ?? undefined;
  if (thinking?.type === "disabled") return undefined;
  if (thinking?.type === "enabled") return effortFor(thinking.budget_tokens, req.max_tokens);
  if (effort !== undefined) {
    const mapped = EFFORTS[effort];
    if (!mapped) notes.add(["output_config", "effort"], "effort", "effort_unsupported");
    return mapped;
  }
  return thinking?.type === "adaptive" ? "medium" : undefined;
}

/** Structured output asked in `output_config.format`, as chat completions' response_format. */
function responseFormat(req: MessagesRequest, notes: Untranslatable): ChatRequest["response_format"] {
  const format = req.output_config?.format;
  if (!format) return undefined;
  if (format.type === "json_schema" && format.schema)
    return { type: "json_schema", json_schema: { name: "output", schema: format.schema, strict: true } };
  notes.add(["output_config", "format"], `format ${format.type}`, "structured_outputs_unsupported");
  return undefined;
}

/** A client tool's fields the translation carries or that change nothing there (`server` is the parse's mark). */
const TOOL_FIELDS: ReadonlySet<string> = new Set([
  "type",
  "name",
  "description",
  "input_schema",
  "strict",
  "cache_control",
  "server",
]);

/** Top-level fields read but not carried by the canonical request, each with its capability class. */
const UNCARRIED: Readonly<Record<string, string | undefined>> = {
  top_k: undefined,
  context_management: undefined,
};

/**
 * The canonical request: Anthropic's fields as chat completions has them (docs/apis.md), and
 * what it cannot carry (fields, blocks and tools the gateway does not translate), which an
 * Anthropic upstream gets natively and any other drops with a notice. Cache markers,
 * thinking blocks, `is_error` and `service_tier` change nothing an upstream answers and have
 * no place there.
 */
export function canonicalRequest(req: MessagesRequest): {
  request: ChatRequest;
  untranslated: Untranslated[];
} {
  const notes = new Untranslatable();
  const messages: CanonicalMessage[] = [];
  if (req.system !== undefined) {
    const text = typeof req.system === "string" ? req.system : req.system.map((b) => b.text).join("\n");
    if (text) messages.push({ role: "system", content: text });
  }
  req.messages.forEach((m, i) => {
    messages.push(...turn(m, i, notes));
  });
  const out: ChatRequest = { model: req.model, messages, max_tokens: req.max_tokens };
  if (req.stream) out.stream = true;
  if (req.temperature !== undefined) out.temperature = req.temperature;
  if (req.top_p !== undefined) out.top_p = req.top_p;
  if (req.stop_sequences?.length) out.stop = req.stop_sequences;
  if (req.metadata?.user_id) out.user = req.metadata.user_id;
  const tools: { type: "function"; function: { name: string; [k: string]: unknown } }[] = [];
  req.tools?.forEach((t, i) => {
    if (t.server) {
      notes.add(["tools", i], t.type);
      return;
    }
    const custom = t as Extract<typeof t, { server: false }>;
    // a tool's fields the translation does not carry (eager_input_streaming, input_examples,
    // defer_loading, allowed_callers, and what comes next)
    for (const field of Object.keys(custom))
      if (!TOOL_FIELDS.has(field)) notes.add(["tools", i, field], field);
    tools.push({
      type: "function",
      function: {
        name: custom.name,
        ...(custom.description === undefined ? {} : { description: custom.description }),
        parameters: custom.input_schema,
        ...(custom.strict === undefined ? {} : { strict: custom.strict }),
      },
    });
  });
  if (tools.length) out.tools = tools;
  const choice = req.tool_choice;
  if (choice && (choice.type !== "tool" || tools.some((t) => t.function.name === choice.name))) {
    out.tool_choice =
      choice.type === "tool"
        ? { type: "function", function: { name: choice.name } }
        : choice.type === "any"
          ? "required"
          : choice.type;
    if (choice.type !== "none" && choice.disable_parallel_tool_use) out.parallel_tool_calls = false;
  } else if (choice) notes.add(["tool_choice"], "tool_choice");
  const effort = reasoningEffort(req, notes);
  if (effort !== undefined) out.reasoning_effort = effort;
  const format = responseFormat(req, notes);
  if (format) out.response_format = format;
  for (const field of Object.keys(req)) {
    if (field in UNCARRIED) notes.add([field], field, UNCARRIED[field]);
    else if (!KNOWN_FIELDS.has(field)) notes.add([field], field);
  }
  return { request: out, untranslated: notes.list };
}
