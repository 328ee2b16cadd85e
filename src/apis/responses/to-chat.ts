// A Responses request as the canonical chat request every provider adapter takes: the
// conversation (the stored one a previous_response_id continues, then this request's input)
// as messages, the tools, the output settings. What the gateway cannot honour anywhere is
// refused here, naming the field, before anything is reserved or sent; what only an upstream
// of this API can take (fields, tools and items it does not translate) is listed as
// untranslated, for the others to drop with a notice. docs/apis.md lists each field's fate.

import type { ChatRequest } from "../../domain/chat-request.ts";
import { GatewayError } from "../../errors/index.ts";
import { BUILTIN_ITEM_TYPES, type BuiltinToolUse } from "../../providers/builtin-tools.ts";
import type { Untranslated } from "../../providers/passthrough.ts";
import { flatName } from "./namespaces.ts";
import {
  type CustomTool,
  type FunctionTool,
  type InputItem,
  isKnownItem,
  type NamespaceTool,
  type ResponsesRequest,
  type ResponsesTool,
  responsesRequestSchema,
} from "./request.ts";

type Message = ChatRequest["messages"][number];
type AssistantMessage = Extract<Message, { role: "assistant" }>;
type ToolCall = NonNullable<AssistantMessage["tool_calls"]>[number];
type ChatPart = Exclude<Message["content"], string | null | undefined>[number];

const refuse = (param: string, message: string) => new GatewayError("invalid_request", { message, param });

/** Items of a stored conversation, and where an error in them points. */
export interface PriorItems {
  items: InputItem[];
  /** `previous_response_id`: the client named them, it did not write them */
  param: string;
}

/** Refuses the request fields the gateway cannot honour on any upstream; each would change the answer. */
function refuseUnsupported(req: ResponsesRequest): void {
  if (req.background)
    throw refuse(
      "background",
      "Background responses are not supported by the gateway: send the request without background (stream it for long answers).",
    );
  if (req.conversation !== undefined)
    throw refuse(
      "conversation",
      "Conversations are kept at OpenAI and not supported by the gateway: continue with previous_response_id.",
    );
  if (req.prompt !== undefined)
    throw refuse(
      "prompt",
      "Prompt templates are kept at OpenAI and not supported by the gateway: send the input.",
    );
}

/** A function or custom tool's fields the translation carries. */
const TOOL_FIELDS: ReadonlySet<string> = new Set([
  "type",
  "name",
  "description",
  "parameters",
  "strict",
  "format",
]);

/** The top-level fields the gateway reads. */
const KNOWN_FIELDS: ReadonlySet<string> = new Set(Object.keys(responsesRequestSchema.shape));

/**
 * The request's fields no chat completion carries: truncation `auto`, log probabilities,
 * server-side compaction, and fields the gateway does not know. An upstream of this API gets
 * them natively; a translation drops them with a notice.
 */
function untranslatedFields(req: ResponsesRequest): Untranslated[] {
  const out: Untranslated[] = [];
  if (req.truncation === "auto") out.push({ param: "truncation", name: "truncation" });
  if (req.top_logprobs) out.push({ param: "top_logprobs", name: "top_logprobs" });
  if (req.context_management?.length) out.push({ param: "context_management", name: "context_management" });
  for (const field of Object.keys(req))
    if (!KNOWN_FIELDS.has(field) && req[field] !== undefined && req[field] !== null)
      out.push({ param: field, name: field });
  return out;
}

/**
 * The tools as chat completions has them: a namespace's tools each under its flattened name
 * (./namespaces.ts); none for a built-in tool, which only a native upstream serves.
 */
function chatTools(tool: ResponsesTool): NonNullable<ChatRequest["tools"]> {
  if (tool.type === "namespace") {
    const ns = tool as NamespaceTool;
    return (ns.tools as Array<FunctionTool | CustomTool>).flatMap((inner) => {
      if (inner.type !== "function" && inner.type !== "custom") return [];
      return chatTools({ ...inner, name: flatName(ns.name, inner.name) } as ResponsesTool);
    });
  }
  const one = chatTool(tool);
  return one ? [one] : [];
}

function chatTool(tool: ResponsesTool): NonNullable<ChatRequest["tools"]>[number] | undefined {
  if (tool.type === "function") {
    const t = tool as FunctionTool;
    return {
      type: "function",
      function: {
        name: t.name,
        ...(t.description === undefined ? {} : { description: t.description }),
        ...(t.parameters === undefined ? {} : { parameters: t.parameters }),
        ...(t.strict === undefined ? {} : { strict: t.strict }),
      },
    };
  }
  if (tool.type === "custom") {
    const t = tool as CustomTool;
    const format =
      t.format?.type === "grammar"
        ? { type: "grammar", grammar: { syntax: t.format.syntax, definition: t.format.definition } }
        : t.format;
    return {
      type: "custom",
      custom: {
        name: t.name,
        ...(t.description === undefined ? {} : { description: t.description }),
        ...(format === undefined ? {} : { format }),
      },
    };
  }
  return undefined;
}

function chatToolChoice(choice: ResponsesRequest["tool_choice"]): ChatRequest["tool_choice"] {
  if (choice === undefined || typeof choice === "string") return choice;
  const named = (type: string, name: unknown) => {
    if (typeof name !== "string" || !name)
      throw refuse("tool_choice.name", `A tool_choice of type '${type}' must name the tool.`);
    return name;
  };
  if (choice.type === "function")
    return { type: "function", function: { name: named("function", choice.name) } };
  if (choice.type === "custom") return { type: "custom", custom: { name: named("custom", choice.name) } };
  if (choice.type === "allowed_tools") {
    const tools = (choice as { tools?: unknown }).tools;
    const mode = (choice as { mode?: unknown }).mode;
    if (!Array.isArray(tools) || (mode !== "auto" && mode !== "required"))
      throw refuse(
        "tool_choice",
        "A tool_choice of type 'allowed_tools' needs a mode (auto or required) and tools.",
      );
    return {
      type: "allowed_tools",
      allowed_tools: {
        mode,
        tools: tools.map((t: { type?: unknown; name?: unknown }, i) => {
          if (t?.type !== "function" && t?.type !== "custom")
            throw refuse(`tool_choice.tools[${i}]`, "Only function and custom tools can be allowed.");
          return t.type === "function"
            ? { type: "function", function: { name: t.name } }
            : { type: "custom", custom: { name: t.name } };
        }),
      },
    };
  }
  // a built-in tool: only a native upstream honours it (builtinToolUses lists it)
  return undefined;
}

type Part = Extract<InputItem, { type: "message" }>["content"] extends string | Array<infer P> ? P : never;

function chatPart(part: Part, param: string): ChatPart {
  switch (part.type) {
    case "input_text":
    case "output_text":
      return { type: "text", text: part.text };
    case "refusal":
      return { type: "text", text: part.refusal };
    case "input_image":
      if (!part.image_url)
        throw refuse(
          `${param}.file_id`,
          "Images given by file_id live in OpenAI's file store, which the gateway does not reach: send image_url (an http(s) or data: URL).",
        );
      return {
        type: "image_url",
        image_url: { url: part.image_url, ...(part.detail === undefined ? {} : { detail: part.detail }) },
      };
    case "input_file":
      if (!part.file_data)
        throw refuse(
          param,
          "Files given by file_id or file_url are not supported by the gateway: send file_data (base64) with a filename.",
        );
      return {
        type: "file",
        file: {
          file_data: part.file_data,
          ...(part.filename === undefined ? {} : { filename: part.filename }),
        },
      };
  }
}

function chatContent(content: string | Part[], param: string): string | ChatPart[] {
  if (typeof content === "string") return content;
  return content.map((part, i) => chatPart(part, `${param}[${i}]`));
}

/** An assistant turn's text: the text of its parts (an assistant writes no images). */
function assistantText(content: string | Part[], param: string): string {
  if (typeof content === "string") return content;
  return content
    .map((part, i) => {
      const p = chatPart(part, `${param}[${i}]`);
      if (p.type !== "text") throw refuse(`${param}[${i}]`, "An assistant message can hold text only.");
      return p.text;
    })
    .join("");
}

/**
 * The conversation as chat messages: instructions, the stored items, then this request's
 * input. Items of types no chat message carries are noted in `untranslated` (a built-in
 * tool's are listed by builtinToolUses instead); the tools of additional_tools items in `tools`.
 */
function chatMessages(
  req: ResponsesRequest,
  prior: PriorItems | undefined,
  untranslated: Untranslated[],
  tools: ResponsesTool[],
): Message[] {
  const messages: Message[] = [];
  if (req.instructions) messages.push({ role: "system", content: req.instructions });
  // Tool calls join the assistant turn they follow: chat completions keeps them on one message.
  const openAssistant = (): AssistantMessage => {
    const last = messages.at(-1);
    if (last?.role === "assistant") return last;
    const message: AssistantMessage = { role: "assistant", content: null };
    messages.push(message);
    return message;
  };
  const addCall = (call: ToolCall) => {
    const turn = openAssistant();
    turn.tool_calls = [...(turn.tool_calls ?? []), call];
  };
  const add = (any: InputItem, param: string) => {
    if (!isKnownItem(any)) {
      if (!BUILTIN_ITEM.has(any.type)) untranslated.push({ param, name: any.type });
      return;
    }
    const item = any;
    switch (item.type) {
      case "message": {
        const content = `${param}.content`;
        if (item.role !== "assistant") {
          messages.push({ role: item.role, content: chatContent(item.content, content) });
          break;
        }
        const text = assistantText(item.content, content);
        const last = messages.at(-1);
        // Text after the turn's tool calls would read as written before them: a turn of its own.
        if (last?.role === "assistant" && !last.tool_calls?.length)
          last.content = (last.content ?? "") + text;
        else messages.push({ role: "assistant", content: text });
        break;
      }
      case "function_call":
        addCall({
          id: item.call_id,
          type: "function",
          function: {
            name: item.namespace ? flatName(item.namespace, item.name) : item.name,
            arguments: item.arguments,
          },
        });
        break;
      case "custom_tool_call":
        addCall({
          id: item.call_id,
          type: "custom",
          custom: {
            name: item.namespace ? flatName(item.namespace, item.name) : item.name,
            input: item.input,
          },
        });
        break;
      case "function_call_output":
      case "custom_tool_call_output":
        messages.push({
          role: "tool",
          tool_call_id: item.call_id,
          content: chatContent(item.output, `${param}.output`),
        });
        break;
      case "reasoning":
        // No chat field carries reasoning back to a model (docs/apis.md): left out.
        break;
      case "item_reference":
        // resolved from the account's stored responses before this (./api.ts): one left is none of its
        throw refuse(param, `No stored item of this account has the id '${item.id}'.`);
      case "additional_tools":
        (item.tools as ResponsesTool[]).forEach((tool, j) => {
          if (tool.type === "function" || tool.type === "custom" || tool.type === "namespace")
            tools.push(tool);
          else untranslated.push({ param: `${param}.tools[${j}]`, name: tool.type });
        });
        break;
    }
  };
  if (prior) for (const item of prior.items) add(item, prior.param);
  const input: InputItem[] =
    typeof req.input === "string" ? [{ type: "message", role: "user", content: req.input }] : req.input;
  input.forEach((item, i) => {
    add(item, `input[${i}]`);
  });
  if (!messages.some((m) => m.role !== "system" && m.role !== "developer"))
    throw refuse("input", "The conversation is empty: give input, or a previous_response_id to continue.");
  return messages;
}

/**
 * The canonical chat request for `req` continuing `prior` (the stored conversation, if any),
 * and what it could not carry.
 */
export function toChatRequest(
  req: ResponsesRequest,
  prior?: PriorItems,
): { request: ChatRequest; untranslated: Untranslated[] } {
  refuseUnsupported(req);
  const untranslated = untranslatedFields(req);
  const added: ResponsesTool[] = [];
  const chat: ChatRequest = { model: req.model, messages: chatMessages(req, prior, untranslated, added) };
  if (req.stream) chat.stream = true;
  req.tools?.forEach((tool, i) => {
    if (tool.type !== "function" && tool.type !== "custom") return;
    // a tool's fields the translation does not carry (defer_loading, allowed_callers, …)
    for (const field of Object.keys(tool))
      if (!TOOL_FIELDS.has(field)) untranslated.push({ param: `tools[${i}].${field}`, name: field });
  });
  const tools = [...(req.tools ?? []), ...added].flatMap(chatTools);
  if (tools.length) chat.tools = tools;
  const toolChoice = chatToolChoice(req.tool_choice);
  if (toolChoice !== undefined) chat.tool_choice = toolChoice;
  if (req.parallel_tool_calls !== undefined) chat.parallel_tool_calls = req.parallel_tool_calls;
  if (req.max_output_tokens !== undefined) chat.max_completion_tokens = req.max_output_tokens;
  if (req.temperature !== undefined) chat.temperature = req.temperature;
  if (req.top_p !== undefined) chat.top_p = req.top_p;
  const format = req.text?.format;
  if (format?.type === "json_object") chat.response_format = { type: "json_object" };
  else if (format?.type === "json_schema") {
    const f = format as Extract<typeof format, { schema: unknown }>;
    chat.response_format = {
      type: "json_schema",
      json_schema: {
        name: f.name,
        schema: f.schema,
        ...(f.description === undefined ? {} : { description: f.description }),
        ...(f.strict === undefined ? {} : { strict: f.strict }),
      },
    };
  }
  if (req.text?.verbosity !== undefined) chat.verbosity = req.text.verbosity;
  if (req.reasoning?.effort !== undefined) chat.reasoning_effort = req.reasoning.effort;
  if (req.user !== undefined) chat.user = req.user;
  if (req.safety_identifier !== undefined) chat.safety_identifier = req.safety_identifier;
  if (req.prompt_cache_key !== undefined) chat.prompt_cache_key = req.prompt_cache_key;
  if (req.service_tier !== undefined) chat.service_tier = req.service_tier;
  return { request: chat, untranslated };
}

const BUILTIN_ITEM: ReadonlySet<string> = new Set(BUILTIN_ITEM_TYPES);

/**
 * The built-in tools the request uses, which the canonical request leaves out: its tools, a
 * tool_choice naming one, and the items they made earlier (in the stored conversation or sent
 * back). Empty for most requests; otherwise only an upstream that passes them on can answer.
 */
export function builtinToolUses(req: ResponsesRequest, prior?: PriorItems): BuiltinToolUse[] {
  const uses: BuiltinToolUse[] = [];
  req.tools?.forEach((tool, i) => {
    if (tool.type !== "function" && tool.type !== "custom" && tool.type !== "namespace")
      uses.push({ type: tool.type, param: `tools[${i}]` });
  });
  const choice = req.tool_choice;
  if (typeof choice === "object" && !["function", "custom", "allowed_tools"].includes(choice.type))
    uses.push({ type: choice.type, param: "tool_choice" });
  const items = (list: readonly InputItem[], param: (i: number) => string) =>
    list.forEach((item, i) => {
      if (BUILTIN_ITEM.has(item.type)) uses.push({ type: item.type, param: param(i) });
    });
  if (prior) items(prior.items, () => prior.param);
  if (typeof req.input !== "string") items(req.input, (i) => `input[${i}]`);
  return uses;
}
