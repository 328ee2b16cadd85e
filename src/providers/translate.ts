// Reading an OpenAI chat request the way every translating adapter needs it: message text,
// image parts, tool calls and their arguments, tools and tool_choice, each checked once,
// with the refusals naming the part (`param`) and the provider.
import type { ChatRequest } from "../domain/chat-request.ts";
import { GatewayError } from "../errors/index.ts";
import { unsupportedPart } from "./field-policy.ts";

export type Message = ChatRequest["messages"][number];
export type ContentPart = Exclude<Message["content"], string | null | undefined>[number];

/** A part as the adapter needs it: text, or an image given inline (base64) or by URL. */
export type Part =
  | { kind: "text"; text: string }
  | { kind: "image"; mediaType: string; data: string }
  | { kind: "image-url"; url: string };

const DATA_URL = /^data:([\w.+-]+\/[\w.+-]+)(?:;[^,;]*)*;base64,/;

/** The parts of a message's content; parts the provider cannot take are refused. */
export function readParts(content: Message["content"], param: string, provider: string): Part[] {
  if (content == null) return [];
  if (typeof content === "string") return content ? [{ kind: "text", text: content }] : [];
  const parts: Part[] = [];
  content.forEach((part, i) => {
    const at = `${param}[${i}]`;
    if (part.type === "text") {
      if (part.text) parts.push({ kind: "text", text: part.text });
    } else if (part.type === "refusal") {
      if (part.refusal) parts.push({ kind: "text", text: part.refusal });
    } else if (part.type === "image_url") {
      const url = part.image_url.url;
      const data = DATA_URL.exec(url);
      if (data) parts.push({ kind: "image", mediaType: data[1]!, data: url.slice(data[0].length) });
      else if (/^https?:\/\//i.test(url)) parts.push({ kind: "image-url", url });
      else
        throw unsupportedPart(
          `${at}.image_url.url`,
          provider,
          "An image that is neither a data: URL nor an http(s) URL",
        );
    } else throw unsupportedPart(at, provider, `A content part of type '${part.type}'`);
  });
  return parts;
}

/** The text of a message that may carry text only (system and developer messages). */
export function textOnly(content: Message["content"], param: string, provider: string): string {
  return readParts(content, param, provider)
    .map((p) => {
      if (p.kind !== "text")
        throw unsupportedPart(param, provider, "An image in a system or developer message");
      return p.text;
    })
    .join("\n");
}

/** A tool call's arguments as the object providers take; OpenAI sends them as a JSON string. */
export function toolArguments(args: string, param: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = args.trim() === "" ? {} : JSON.parse(args);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new GatewayError("invalid_request", {
      message: `Invalid parameter '${param}': must be a JSON object, as the model wrote it.`,
      param,
    });
  return parsed as Record<string, unknown>;
}

/** An assistant message's tool call as a function call; calls of custom tools are refused. */
export function functionCall(
  call: NonNullable<Extract<Message, { role: "assistant" }>["tool_calls"]>[number],
  param: string,
  provider: string,
): { id: string; name: string; arguments: string } {
  if (!("function" in call) || call.type === "custom")
    throw unsupportedPart(param, provider, `A tool call of type '${call.type}'`);
  const fn = call.function as { name: string; arguments: string };
  return { id: call.id, name: fn.name, arguments: fn.arguments };
}

export interface FunctionTool {
  name: string;
  description: string | undefined;
  parameters: Record<string, unknown> | undefined;
}

/** The request's tools; only function tools exist at the providers that translate. */
export function functionTools(request: ChatRequest, provider: string): FunctionTool[] {
  return (request.tools ?? []).map((tool, i) => {
    const fn = (tool as { function?: { name?: unknown; description?: unknown; parameters?: unknown } })
      .function;
    if (tool.type !== "function" || typeof fn?.name !== "string")
      throw unsupportedPart(`tools[${i}]`, provider, `A tool of type '${tool.type}'`);
    return {
      name: fn.name,
      description: typeof fn.description === "string" ? fn.description : undefined,
      parameters:
        fn.parameters && typeof fn.parameters === "object"
          ? (fn.parameters as Record<string, unknown>)
          : undefined,
    };
  });
}

export type ToolChoice = { mode: "auto" | "none" | "required" } | { mode: "named"; name: string };

/** tool_choice as one of the four modes every provider has. */
export function toolChoice(request: ChatRequest, provider: string): ToolChoice | undefined {
  const choice = request.tool_choice;
  if (choice === undefined) return undefined;
  if (choice === "auto" || choice === "none" || choice === "required") return { mode: choice };
  const name = (choice as { function?: { name?: unknown } }).function?.name;
  if (typeof choice === "object" && choice.type === "function" && typeof name === "string")
    return { mode: "named", name };
  throw unsupportedPart("tool_choice", provider, `tool_choice ${JSON.stringify(choice).slice(0, 80)}`);
}

/** The share of the output bound each reasoning effort may think for (docs/providers.md). */
export const EFFORT_SHARE: Readonly<Record<string, number>> = {
  low: 0.25,
  medium: 0.5,
  high: 0.8,
};

/** The reasoning_effort values the translating providers know. */
export const EFFORTS: readonly string[] = ["none", "minimal", "low", "medium", "high"];

/** Why a reasoning_effort cannot be honoured, for a FieldRule's `refuse`. */
export const unknownEffort = (effort: string) =>
  EFFORTS.includes(effort) ? undefined : `it knows no reasoning effort '${effort}'`;

/**
 * A system message in the middle of a conversation, for an upstream whose system prompt can
 * only open it (Anthropic without the mid-conversation beta, Gemini): text in a user turn at
 * that place, marked so the model reads it as the system's.
 */
export function midConversationSystem(text: string): string {
  return `<system>\n${text}\n</system>`;
}
