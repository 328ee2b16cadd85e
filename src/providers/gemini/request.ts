// An OpenAI chat request as a Gemini generateContent request. Gemini refuses unknown fields
// and roles other than user and model, so only what its API defines is sent.
import type { ChatRequest } from "../../domain/chat-request.ts";
import { GatewayError } from "../../errors/index.ts";
import { customToolsAsFunctions } from "../custom-tools.ts";
import {
  applyFieldRules,
  dropped,
  type FieldRules,
  mapped,
  refused,
  SHARED_RULES,
  unsupportedPart,
} from "../field-policy.ts";
import { type PromptOverheads, promptUpperBound } from "../prompt-bound.ts";
import {
  EFFORT_SHARE,
  functionCall,
  functionTools,
  midConversationSystem,
  type Part,
  readParts,
  textOnly,
  toolArguments,
  toolChoice,
  unknownEffort,
} from "../translate.ts";
import type { NativeRequest, UpstreamCall } from "../types.ts";
import { thoughtSignatureOf } from "./tool-ids.ts";

export const PROVIDER = "Google Gemini";

/**
 * What Gemini adds to the prompt beyond what the request carries. Google documents no fixed
 * tool or system prompt (function declarations are counted in promptTokenCount as they are
 * sent, which the shared bound counts): nothing is added today, in one place should that change.
 */
export const ADDED_PROMPT_TOKENS = 0;

/**
 * The prompt part of the reservation: the shared bound plus what Gemini adds, and, for a
 * Gemini API body sent as it is, the larger of that and the body's own bound: the body
 * carries what its canonical request does not (Google's tools, media it has no part for,
 * thought signatures, fields newer than the gateway).
 */
export function geminiPromptBound(
  request: ChatRequest,
  overheads: PromptOverheads,
  native?: NativeRequest,
): number {
  const bound = promptUpperBound(request, overheads) + ADDED_PROMPT_TOKENS;
  return native?.api === "gemini" ? Math.max(bound, geminiBodyBound(native.body, overheads)) : bound;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
/** A field of a Gemini body in either of its spellings (`inlineData`, `inline_data`). */
const field = (o: Json, name: string): unknown =>
  o[name] ?? o[name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];

/**
 * The most prompt tokens Gemini can count for a body sent as it is: every byte of its JSON,
 * the per-request and per-turn shares, tools, and each medium's bound beyond its bytes
 * (Gemini counts an image as 258 tokens a tile whatever its size, and a file by reference has
 * no bytes in the body at all). Audio and video inline are counted by their length, which the
 * bytes do not bound either: they take the audio and file bounds, and beyond them the
 * upstream's count is charged as reported (an overrun).
 */
export function geminiBodyBound(body: Readonly<Json>, o: PromptOverheads): number {
  let n = o.per_request + Buffer.byteLength(JSON.stringify(body), "utf8");
  const media = (parts: unknown) => {
    if (!Array.isArray(parts)) return;
    for (const part of parts) {
      if (!isObject(part)) continue;
      const data = field(part, "inlineData") ?? field(part, "fileData");
      if (!isObject(data)) continue;
      const mime = String(field(data, "mimeType") ?? "");
      n += mime.startsWith("image/") ? o.image : mime.startsWith("audio/") ? o.audio : o.file;
    }
  };
  const contents = field(body as Json, "contents");
  if (Array.isArray(contents))
    for (const c of contents) {
      n += o.per_message;
      if (isObject(c)) media(c.parts);
    }
  const system = field(body as Json, "systemInstruction");
  if (isObject(system)) {
    n += o.per_message;
    media(system.parts);
  }
  const tools = body.tools;
  if (Array.isArray(tools) && tools.length) n += o.tools;
  return n;
}

/**
 * A Gemini API client's body, as it came, for this upstream: the reserved output bound as
 * `maxOutputTokens` (in the client's spelling of generationConfig), and the upstream's model
 * where the body names one. Parts, thought signatures, safety settings, Google's tools and
 * whatever the gateway does not know pass untouched.
 */
export function nativeGenerateBody(call: UpstreamCall, native: NativeRequest): Json {
  const body: Json = { ...native.body };
  const key =
    body.generationConfig === undefined && body.generation_config !== undefined
      ? "generation_config"
      : "generationConfig";
  const config: Json = isObject(body[key]) ? { ...(body[key] as Json) } : {};
  delete config.max_output_tokens;
  config.maxOutputTokens = call.outputBound;
  body[key] = config;
  if (body.model !== undefined) body.model = `models/${call.upstreamModel}`;
  return body;
}

/** A countTokens body for this upstream: a whole request names the model, which Google requires there. */
export function nativeCountBody(native: NativeRequest, upstreamModel: string): Json {
  const body: Json = { ...native.body };
  const key =
    body.generateContentRequest === undefined && body.generate_content_request !== undefined
      ? "generate_content_request"
      : "generateContentRequest";
  if (isObject(body[key])) body[key] = { ...(body[key] as Json), model: `models/${upstreamModel}` };
  return body;
}

/** The largest thinking budget every Gemini 2.5 model takes (Flash and Flash-Lite: 24576). */
export const MAX_THINKING_BUDGET = 24_576;
/** The smallest budget every thinking model takes (Flash-Lite: 512). */
export const MIN_THINKING_BUDGET = 512;

export const GEMINI_RULES: FieldRules = {
  ...SHARED_RULES,
  temperature: mapped("`generationConfig.temperature`"),
  top_p: mapped("`generationConfig.topP`"),
  max_tokens: mapped(
    "superseded: `generationConfig.maxOutputTokens` carries the output bound the gateway reserved",
  ),
  max_completion_tokens: mapped(
    "superseded: `generationConfig.maxOutputTokens` carries the output bound the gateway reserved",
  ),
  n: mapped("`generationConfig.candidateCount`"),
  stop: mapped("`generationConfig.stopSequences`"),
  seed: mapped("`generationConfig.seed`"),
  user: dropped("Gemini has no end-user field; the answer is the same"),
  tools: mapped(
    "`tools[].functionDeclarations` (function tools, and custom tools as functions of one string argument; `parameters` keep the schema keywords Gemini's Schema knows)",
  ),
  tool_choice: mapped(
    "`toolConfig.functionCallingConfig.mode`: `auto` → AUTO, `none` → NONE, `required` → ANY, a named function → ANY with `allowedFunctionNames`",
  ),
  parallel_tool_calls: refused(
    "it cannot be told to call one function at a time",
    (p: boolean) => p,
    "`true` (the default): dropped; `false`: refused",
  ),
  response_format: mapped(
    "`json_object` → `responseMimeType: application/json`; `json_schema` → that and `responseSchema` (the keywords Gemini's Schema knows); `text` dropped",
  ),
  presence_penalty: mapped("`generationConfig.presencePenalty`"),
  frequency_penalty: mapped("`generationConfig.frequencyPenalty`"),
  logprobs: refused(
    "the gateway does not translate its log probabilities",
    (l: boolean) => !l,
    "`false`: dropped; `true`: refused",
  ),
  top_logprobs: refused(
    "the gateway does not translate its log probabilities",
    (n: number) => n === 0,
    "0: dropped; else refused",
  ),
  reasoning_effort: {
    becomes: `\`generationConfig.thinkingConfig.thinkingBudget\`: \`none\` → 0; \`minimal\` → ${MIN_THINKING_BUDGET}; \`low\`, \`medium\`, \`high\` → 25 %, 50 %, 80 % of the output bound, from ${MIN_THINKING_BUDGET} to ${MAX_THINKING_BUDGET}`,
    refuse: unknownEffort,
  },
  safety_identifier: dropped("Gemini has no end-user field; the answer is the same"),
};

/** The keywords of Gemini's Schema object; other JSON Schema keywords are refused there. */
const SCHEMA_KEYS = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "enum",
  "maxItems",
  "minItems",
  "properties",
  "required",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "example",
  "anyOf",
  "propertyOrdering",
  "default",
  "items",
  "minimum",
  "maximum",
]);

/**
 * A JSON Schema as Gemini's Schema: unknown keywords (additionalProperties, $schema, $ref,
 * strict, …) left out, `type: [T, "null"]` as `nullable`, `const` as a one-value enum.
 */
export function geminiSchema(schema: unknown): unknown {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "const") out.enum = [value];
    else if (key === "type" && Array.isArray(value)) {
      const types = value.filter((t) => t !== "null");
      if (types.length !== value.length) out.nullable = true;
      if (types.length === 1) out.type = types[0];
      else out.anyOf = types.map((type) => ({ type }));
    } else if (key === "properties" && value && typeof value === "object")
      out.properties = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, geminiSchema(s)]));
    else if (key === "items" || key === "anyOf")
      out[key] = Array.isArray(value) ? value.map(geminiSchema) : geminiSchema(value);
    else if (SCHEMA_KEYS.has(key)) out[key] = value;
  }
  return out;
}

type GeminiPart = Record<string, unknown>;
interface Content {
  role: "user" | "model";
  parts: GeminiPart[];
}

function partOf(part: Part, param: string): GeminiPart {
  if (part.kind === "text") return { text: part.text };
  if (part.kind === "image") return { inlineData: { mimeType: part.mediaType, data: part.data } };
  throw unsupportedPart(param, PROVIDER, "An image given by URL (send it as a data: URL)");
}

/** A tool's result as a functionResponse's `response`, which must be an object. */
function responseOf(parts: Part[], param: string): Record<string, unknown> {
  const text = parts
    .map((p, j) => {
      if (p.kind !== "text") throw unsupportedPart(`${param}[${j}]`, PROVIDER, "An image in a tool result");
      return p.text;
    })
    .join("");
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
    return { result: parsed };
  } catch {
    return { result: text };
  }
}

/** The thinking budget of an effort within `bound` (docs/providers.md). */
export function thinkingBudget(effort: string, bound: number): number {
  if (effort === "none") return 0;
  const share = EFFORT_SHARE[effort] ?? 0;
  return Math.min(MAX_THINKING_BUDGET, Math.max(MIN_THINKING_BUDGET, Math.floor(bound * share)));
}

/** The generateContent body. Throws invalid_request, before anything is sent, for what Gemini cannot honour. */
export function generateBody(call: UpstreamCall, strict: boolean) {
  const request = customToolsAsFunctions(applyFieldRules(call, GEMINI_RULES, PROVIDER, strict));
  const system: string[] = [];
  const contents: Content[] = [];
  /** tool-call id -> function name: OpenAI's tool results name the call, Gemini's the function */
  const names = new Map<string, string>();
  const push = (role: Content["role"], parts: GeminiPart[]) => {
    if (!parts.length) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  request.messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    switch (m.role) {
      case "system":
      case "developer": {
        const text = textOnly(m.content, `${param}.content`, PROVIDER);
        // Mid-conversation (Claude Code sends such turns): text the model sees at that place.
        if (text && contents.length) push("user", [{ text: midConversationSystem(text) }]);
        else if (text) system.push(text);
        break;
      }
      case "user":
        push(
          "user",
          readParts(m.content, `${param}.content`, PROVIDER).map((p, j) =>
            partOf(p, `${param}.content[${j}]`),
          ),
        );
        break;
      case "assistant": {
        const parts = readParts(m.content, `${param}.content`, PROVIDER).map((p, j) =>
          partOf(p, `${param}.content[${j}]`),
        );
        (m.tool_calls ?? []).forEach((c, j) => {
          const fn = functionCall(c, `${param}.tool_calls[${j}]`, PROVIDER);
          names.set(fn.id, fn.name);
          const signature = thoughtSignatureOf(fn.id);
          parts.push({
            functionCall: {
              name: fn.name,
              args: toolArguments(fn.arguments, `${param}.tool_calls[${j}].function.arguments`),
            },
            ...(signature ? { thoughtSignature: signature } : {}),
          });
        });
        push("model", parts);
        break;
      }
      case "tool": {
        const name = names.get(m.tool_call_id);
        if (name === undefined)
          throw new GatewayError("invalid_request", {
            message: `Invalid parameter '${param}.tool_call_id': it names no tool call of an earlier assistant message, and ${PROVIDER} needs the function's name for its result.`,
            param: `${param}.tool_call_id`,
          });
        const parts = readParts(m.content, `${param}.content`, PROVIDER);
        push("user", [{ functionResponse: { name, response: responseOf(parts, `${param}.content`) } }]);
        break;
      }
      default:
        throw new GatewayError("invalid_request", {
          message: `Messages of role '${m.role}' are not supported by ${PROVIDER}: send tool messages.`,
          param: `${param}.role`,
        });
    }
  });

  const generationConfig: Record<string, unknown> = { maxOutputTokens: call.outputBound };
  if (request.temperature !== undefined) generationConfig.temperature = request.temperature;
  if (request.top_p !== undefined) generationConfig.topP = request.top_p;
  if (request.stop !== undefined)
    generationConfig.stopSequences = typeof request.stop === "string" ? [request.stop] : request.stop;
  if (request.n !== undefined && request.n !== 1) generationConfig.candidateCount = request.n;
  if (request.seed !== undefined) generationConfig.seed = request.seed;
  if (request.presence_penalty !== undefined) generationConfig.presencePenalty = request.presence_penalty;
  if (request.frequency_penalty !== undefined) generationConfig.frequencyPenalty = request.frequency_penalty;
  const format = request.response_format;
  if (format && format.type !== "text") {
    generationConfig.responseMimeType = "application/json";
    const schema = (format as { json_schema?: { schema?: unknown } }).json_schema?.schema;
    if (format.type === "json_schema" && schema) generationConfig.responseSchema = geminiSchema(schema);
  }
  if (request.reasoning_effort !== undefined)
    generationConfig.thinkingConfig = {
      thinkingBudget: thinkingBudget(request.reasoning_effort, call.outputBound),
    };

  const body: Record<string, unknown> = { contents };
  if (system.length) body.systemInstruction = { parts: system.map((text) => ({ text })) };
  const tools = functionTools(request, PROVIDER);
  if (tools.length)
    body.tools = [
      {
        functionDeclarations: tools.map((t) => ({
          name: t.name,
          ...(t.description === undefined ? {} : { description: t.description }),
          ...(t.parameters === undefined ? {} : { parameters: geminiSchema(t.parameters) }),
        })),
      },
    ];
  const choice = toolChoice(request, PROVIDER);
  if (choice)
    body.toolConfig = {
      functionCallingConfig:
        choice.mode === "named"
          ? { mode: "ANY", allowedFunctionNames: [choice.name] }
          : { mode: choice.mode === "required" ? "ANY" : choice.mode.toUpperCase() },
    };
  body.generationConfig = generationConfig;
  return body;
}
