// The prompt part of a reservation: an upper bound of what any upstream can count for the
// request, not an estimate. Byte-level BPE tokenizers (GPT, Llama 3, Qwen, …) produce at most
// one token per UTF-8 byte, and SentencePiece with byte fallback at most one per byte plus a
// marker; so the UTF-8 bytes of every text the upstream sees, plus what its chat template adds
// per message and per request, bound what it can count. Non-text parts (images, audio, files)
// have a bound of their own per part. The local tokenizer stays for estimates only.
import type { ChatRequest } from "../domain/chat-request.ts";
import type { EmbeddingRequest } from "../domain/embedding-request.ts";
import { countPromptTokens } from "../tokens/count.ts";
import { customToolsAsFunctions } from "./custom-tools.ts";

/** What a model's chat template adds around the texts, and what a non-text part can cost. */
export interface PromptOverheads {
  /** once per request: BOS, the reply's opening, a default system prompt the template adds */
  per_request: number;
  /** per message: its role header and end-of-turn markers */
  per_message: number;
  /** once when tools or functions are given: the template's tool-use instructions */
  tools: number;
  /** per image part */
  image: number;
  /** per audio part */
  audio: number;
  /** per file part, beyond the bytes of inline file data */
  file: number;
}

/**
 * Defaults that cover the common templates: per request, Llama 3.1's default system block
 * with its dates (about 28 tokens) and Qwen 2.5's default system prompt (about 23); per
 * message, the 5 framing tokens of ChatML, Llama 3 and Gemma plus the role; tools, the
 * instructions of Llama 3.1 (about 60), Qwen 2.5 (about 110) and Hermes (about 200); an image,
 * OpenAI's high detail (at most 1,445 for gpt-4o, about 2,500 for gpt-4.1-mini), Claude
 * (about 1,600) and Gemini (258 per tile). See docs/accounting.md for models that need more.
 */
export const DEFAULT_PROMPT_OVERHEADS: Readonly<PromptOverheads> = Object.freeze({
  per_request: 32,
  per_message: 8,
  tools: 256,
  image: 2_560,
  audio: 4_096,
  file: 16_384,
});

const utf8 = (text: string): number => Buffer.byteLength(text, "utf8");

/**
 * Tool definitions as a template may render them: some inline them as indented JSON
 * (Llama 3.1: `tojson(indent=4)`), whose line breaks and indentation are text too. Each line
 * adds a newline and a run of spaces, at most 2 tokens, beyond the bytes of the compact JSON.
 */
function toolsBound(tools: unknown): number {
  const lines = JSON.stringify(tools, null, 1).split("\n").length;
  return fieldBytes(tools) + 2 * lines;
}

/** A field's text as the upstream sees it: strings as they are, anything else as JSON. */
const fieldBytes = (value: unknown): number =>
  typeof value === "string" ? utf8(value) : utf8(JSON.stringify(value) ?? "");

function contentBound(content: unknown, o: PromptOverheads): number {
  if (typeof content === "string") return utf8(content);
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content as Array<Record<string, unknown>>) {
    switch (part.type) {
      case "text":
        n += utf8(part.text as string);
        break;
      case "refusal":
        n += utf8(part.refusal as string);
        break;
      case "image_url":
        n += o.image;
        break;
      case "input_audio":
        n += o.audio;
        break;
      case "file": {
        const data = (part.file as { file_data?: unknown }).file_data;
        n += o.file + (typeof data === "string" ? utf8(data) : 0);
        break;
      }
      default:
        n += fieldBytes(part);
    }
  }
  return n;
}

/** The most prompt tokens any upstream can count for the request, under these overheads. */
export function promptUpperBound(original: ChatRequest, o: PromptOverheads): number {
  // Custom tools may go upstream as function tools (./custom-tools.ts), whose text holds all
  // of theirs and more: the bound is taken on that form, which covers both.
  const request = customToolsAsFunctions(original);
  let n = o.per_request;
  for (const m of request.messages as ReadonlyArray<Record<string, unknown>>) {
    n += o.per_message;
    // Every field but the role (covered by per_message) is text the template may render:
    // content, name, tool calls and their arguments, tool_call_id, a legacy function_call.
    for (const field in m) {
      if (field === "role") continue;
      const value = m[field];
      if (value === undefined || value === null) continue;
      n += field === "content" ? contentBound(value, o) : fieldBytes(value);
    }
  }
  const tools = request.tools ?? request.functions;
  if (tools?.length) n += o.tools + toolsBound(tools);
  if (request.tool_choice !== undefined && typeof request.tool_choice !== "string")
    n += fieldBytes(request.tool_choice);
  if (request.function_call !== undefined && typeof request.function_call !== "string")
    n += fieldBytes(request.function_call);
  if (request.response_format) n += fieldBytes(request.response_format);
  // predicted output is read by the model like a prompt
  if (request.prediction) n += fieldBytes(request.prediction);
  return n;
}

/** What the model reads as the prompt, to count locally: the messages, and the tools or schema sent with them. */
export function promptParts(request: ChatRequest): { messages: ChatRequest["messages"]; extra: unknown } {
  return { messages: request.messages, extra: request.tools ?? request.functions ?? request.response_format };
}

/**
 * The local count of what the request sends the model, on this thread: for estimates, never
 * for admission. The relay estimates through src/tokens/estimator.ts instead, off the event loop.
 */
export function localPromptTokens(request: ChatRequest): number {
  const { messages, extra } = promptParts(request);
  return countPromptTokens(messages, extra);
}

/** Block and part types an upstream prices as an image or a file, beyond their bytes. */
const IMAGE_TYPES: ReadonlySet<string> = new Set(["image", "input_image", "image_url"]);
const FILE_TYPES: ReadonlySet<string> = new Set(["document", "input_file", "file", "container_upload"]);

/**
 * The most prompt tokens an upstream can count for a client's body sent as it is (a Messages
 * API body to Anthropic, a Responses API body to OpenAI's Responses API): every byte of the
 * body's JSON (its texts, tool definitions, earlier turns and items, thinking, documents,
 * fields newer than the gateway, with their keys), the template's share per request, per
 * message or item and for tools, and the bound of each image and file part. What a server
 * tool adds while it runs (web search results read by the model) is not in the body: it is
 * counted by the upstream and charged as reported.
 */
export function nativeBodyBound(body: Readonly<Record<string, unknown>>, o: PromptOverheads): number {
  let n = o.per_request + utf8(JSON.stringify(body));
  const list = body.messages ?? body.input;
  const items: unknown[] = Array.isArray(list) ? list : [list];
  n += o.per_message * (items.length + (body.instructions || body.system ? 1 : 0));
  const parts = (content: unknown) => {
    if (!Array.isArray(content)) return;
    for (const part of content as Array<{ type?: unknown; content?: unknown }>) {
      const type = typeof part?.type === "string" ? part.type : "";
      if (IMAGE_TYPES.has(type)) n += o.image;
      else if (FILE_TYPES.has(type)) n += o.file;
      // a tool result holds parts of its own
      else if (Array.isArray(part?.content)) parts(part.content);
    }
  };
  for (const item of items) parts((item as { content?: unknown } | null)?.content);
  const tools = body.tools;
  if (Array.isArray(tools) && tools.length) n += o.tools + toolsBound(tools);
  return n;
}

/**
 * The most input tokens an upstream can count for an embeddings request: each text's UTF-8
 * bytes, or its token ids (counted as given), plus `per_message` per input for the markers an
 * embedding model adds around each (BERT's [CLS] and [SEP], a BOS and EOS), `per_request`
 * once, and the bytes of the fields the gateway does not read, which a server may read as
 * input. There is no output.
 */
export function embeddingPromptBound(request: EmbeddingRequest, o: PromptOverheads): number {
  let n = o.per_request + o.per_message * request.inputs.length;
  for (const input of request.inputs) n += typeof input === "string" ? utf8(input) : input.length;
  for (const field in request.extra) n += fieldBytes(request.extra[field]);
  return n;
}
