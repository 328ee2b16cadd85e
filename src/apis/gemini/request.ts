// The body of `POST /v1beta/models/{model}:generateContent` (and `:streamGenerateContent`,
// `:countTokens`): Google's GenerateContentRequest. What the gateway reads of it is checked as
// Google checks it (types, ranges, roles, one datum per part); what it does not read passes
// with the body, which a Gemini upstream gets as it came, and is listed as untranslated for
// the others to drop with a notice (src/providers/passthrough.ts). Google's JSON takes field
// names in lowerCamelCase or snake_case (`system_instruction`, as its REST docs write them):
// each object the gateway reads is read in either spelling.
import { z } from "zod";
import { type ChatRequest, deepest } from "../../domain/chat-request.ts";
import { GatewayError } from "../../errors/index.ts";
import type { Untranslated } from "../../providers/passthrough.ts";
import { EFFORT_SHARE } from "../../providers/translate.ts";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** `system_instruction` → `systemInstruction`: proto JSON's two spellings of a field. */
export const camel = (key: string): string => key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** An object's own keys in lowerCamelCase (one level: maps inside it, such as `args`, keep theirs). */
function camelKeys(value: unknown): unknown {
  if (!isObject(value)) return value;
  let renamed = false;
  for (const key of Object.keys(value)) if (key.includes("_")) renamed = true;
  if (!renamed) return value;
  const out: Json = {};
  for (const [key, v] of Object.entries(value)) out[camel(key)] = v;
  return out;
}

/** An object of Google's API, read in either spelling of its field names, its other fields kept. */
function gObject<S extends z.core.$ZodLooseShape>(shape: S) {
  return z.preprocess(camelKeys, z.looseObject(shape));
}

const blob = gObject({ mimeType: z.string().min(1), data: z.string() });
const fileData = gObject({ mimeType: z.string().optional(), fileUri: z.string().min(1) });
const functionCall = gObject({
  id: z.string().optional(),
  name: z.string().min(1),
  args: z.record(z.string(), z.unknown()).nullish(),
});
const functionResponse = gObject({
  id: z.string().optional(),
  name: z.string().min(1),
  response: z.record(z.string(), z.unknown()).nullish(),
});

/** The data a part holds: Google's `data` oneof. A part holds exactly one. */
const PART_DATA = [
  "text",
  "inlineData",
  "fileData",
  "functionCall",
  "functionResponse",
  "executableCode",
  "codeExecutionResult",
] as const;

const part = gObject({
  text: z.string().optional(),
  inlineData: blob.optional(),
  fileData: fileData.optional(),
  functionCall: functionCall.optional(),
  functionResponse: functionResponse.optional(),
  thought: z.boolean().optional(),
  thoughtSignature: z.string().optional(),
}).superRefine((p, ctx) => {
  const data = PART_DATA.filter((name) => (p as Json)[name] !== undefined);
  if (data.length > 1)
    ctx.addIssue({
      code: "custom",
      message: `a part holds one datum, it has ${data.join(" and ")}`,
    });
});
export type Part = z.output<typeof part>;

const content = gObject({
  role: z.enum(["user", "model"], { message: "Please use a valid role: user, model." }).optional(),
  parts: z.array(part).min(1, "contents.parts must not be empty"),
});
export type Content = z.output<typeof content>;

/** Google's function names: a letter or underscore, then letters, digits, _ . : -; at most 128. */
const FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/;

const functionDeclaration = gObject({
  name: z
    .string()
    .regex(
      FUNCTION_NAME,
      "must start with a letter or underscore and be at most 128 letters, digits, _ . : or -",
    ),
  description: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
  parametersJsonSchema: z.unknown().optional(),
});
const tool = gObject({ functionDeclarations: z.array(functionDeclaration).optional() });

const MODES = ["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"] as const;
const toolConfig = gObject({
  functionCallingConfig: gObject({
    mode: z.enum(MODES).optional(),
    allowedFunctionNames: z.array(z.string().min(1)).optional(),
  }).optional(),
});

const thinkingConfig = gObject({
  includeThoughts: z.boolean().optional(),
  thinkingBudget: z.number().int().min(-1).optional(),
  thinkingLevel: z.string().min(1).max(64).optional(),
});

const generationConfig = gObject({
  stopSequences: z.array(z.string()).max(5).optional(),
  responseMimeType: z.string().optional(),
  responseSchema: z.record(z.string(), z.unknown()).optional(),
  responseJsonSchema: z.unknown().optional(),
  responseModalities: z.array(z.string()).optional(),
  candidateCount: z.number().int().min(1).max(8).optional(),
  maxOutputTokens: z.number().int().min(1).optional(),
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().min(0).max(1).optional(),
  topK: z.number().int().min(0).optional(),
  seed: z.number().int().optional(),
  presencePenalty: z.number().min(-2).max(2).optional(),
  frequencyPenalty: z.number().min(-2).max(2).optional(),
  thinkingConfig: thinkingConfig.optional(),
});

export const generateContentSchema = gObject({
  contents: z.array(content).min(1, "contents is not specified"),
  systemInstruction: gObject({ parts: z.array(part) }).optional(),
  tools: z.array(tool).optional(),
  toolConfig: toolConfig.optional(),
  generationConfig: generationConfig.optional(),
  safetySettings: z.array(z.looseObject({})).optional(),
  cachedContent: z.string().optional(),
  // the body may name the model too (`models/…`); the path's is the one served
  model: z.string().optional(),
});
export type GenerateContentRequest = z.output<typeof generateContentSchema>;

/** `:countTokens` takes the contents alone, or a whole GenerateContentRequest. */
export const countTokensSchema = gObject({
  contents: z.array(content).optional(),
  generateContentRequest: generateContentSchema.optional(),
});

/** A field's place as the SDKs spell it: `contents[0].parts[1].functionCall`. */
export function pathOf(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i ? `.${String(p)}` : String(p))).join("");
}

/** Validates a parsed JSON body; throws invalid_request naming the first bad field as Google words it. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  if (!isObject(body))
    throw new GatewayError("invalid_request", { message: "The request body must be a JSON object." });
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = deepest(result.error.issues[0]!);
  const param = pathOf(issue.path);
  const problem =
    issue.code === "invalid_type" && issue.message.endsWith("received undefined")
      ? "required field is not specified"
      : issue.message;
  throw new GatewayError("invalid_request", {
    message: param ? `Invalid value at '${param}': ${problem}` : problem,
    param: param || null,
  });
}

type Message = ChatRequest["messages"][number];
type ChatPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } }
  | { type: "file"; file: { file_data: string } }
  | { type: "input_audio"; input_audio: { data: string; format: string } };
type ToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };

/** What the canonical request cannot carry, by its place in the client's body. */
class Untranslatable {
  readonly list: Untranslated[] = [];
  add(path: readonly PropertyKey[], name: string, capability?: string): void {
    this.list.push({ param: pathOf(path), name, ...(capability ? { capability } : {}) });
  }
}

/** The formats chat completions' input_audio takes, by Gemini's audio MIME types. */
const AUDIO_FORMATS: Readonly<Record<string, string>> = {
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mp3": "mp3",
  "audio/mpeg": "mp3",
};

/** Inline data as a canonical part: images, PDFs, text, WAV and MP3; undefined for other media. */
function inlinePart(data: { mimeType: string; data: string }): ChatPart | undefined {
  const mime = data.mimeType.toLowerCase().split(";")[0]!.trim();
  if (mime.startsWith("image/"))
    return { type: "image_url", image_url: { url: `data:${mime};base64,${data.data}` } };
  if (mime === "application/pdf")
    return { type: "file", file: { file_data: `data:application/pdf;base64,${data.data}` } };
  if (mime.startsWith("text/"))
    return { type: "text", text: Buffer.from(data.data, "base64").toString("utf8") };
  const format = AUDIO_FORMATS[mime];
  if (format) return { type: "input_audio", input_audio: { data: data.data, format } };
  return undefined;
}

/** The id a function call goes by in the canonical request: its own, else one by its place. */
export function callId(call: { id?: string | undefined }, turn: number, index: number): string {
  return call.id || `call_${turn}_${index}`;
}

/** A function result's content for a tool message: the response object as JSON. */
function resultText(response: Json | null | undefined): string {
  return JSON.stringify(response ?? {});
}

/** The calls of the last model turn, which the next turn's function responses answer. */
interface OpenCall {
  id: string;
  name: string;
  answered: boolean;
}

/** Text only: a string, as every upstream takes it; with other media: parts. */
function chatContent(parts: ChatPart[]): string | ChatPart[] {
  return parts.every((p) => p.type === "text")
    ? parts.map((p) => (p as { text: string }).text).join("")
    : parts;
}

function userTurn(c: Content, i: number, open: OpenCall[], notes: Untranslatable, out: Message[]): void {
  const parts: ChatPart[] = [];
  c.parts.forEach((p, j) => {
    const at = ["contents", i, "parts", j];
    if (p.functionResponse) {
      const r = p.functionResponse;
      const call =
        (r.id ? open.find((o) => o.id === r.id && !o.answered) : undefined) ??
        open.find((o) => o.name === r.name && !o.answered);
      if (!call)
        throw new GatewayError("invalid_request", {
          message: `Invalid value at '${pathOf([...at, "functionResponse"])}': it answers no function call '${r.name.slice(0, 128)}' of the model turn before it.`,
          param: pathOf([...at, "functionResponse"]),
        });
      call.answered = true;
      // results of several parts (images a function returned) are Gemini's own
      if ((r as Json).parts !== undefined) notes.add([...at, "functionResponse", "parts"], "parts");
      out.push({ role: "tool", tool_call_id: call.id, content: resultText(r.response) });
    } else if (p.functionCall)
      throw new GatewayError("invalid_request", {
        message: `Invalid value at '${pathOf([...at, "functionCall"])}': function calls belong to model turns.`,
        param: pathOf([...at, "functionCall"]),
      });
    else if (p.thought) return;
    else if (p.text !== undefined) parts.push({ type: "text", text: p.text });
    else if (p.inlineData) {
      const translated = inlinePart(p.inlineData);
      if (translated) parts.push(translated);
      else notes.add(at, `inlineData ${p.inlineData.mimeType}`);
    } else if (p.fileData) {
      const mime = p.fileData.mimeType?.toLowerCase() ?? "";
      // an image the upstream can fetch itself; Google's file store and other media are Gemini's
      if (mime.startsWith("image/") && /^https?:\/\//i.test(p.fileData.fileUri))
        parts.push({ type: "image_url", image_url: { url: p.fileData.fileUri } });
      else notes.add(at, "fileData");
    } else noteData(notes, at, p);
  });
  if (parts.length) out.push({ role: "user", content: chatContent(parts) } as Message);
}

/**
 * The name of the datum of a part the gateway does not read; undefined for a part that holds
 * none (a signature alone, which a model turn may end with), which has nothing to carry.
 */
function dataName(p: Part): string | undefined {
  return Object.keys(p).find((k) => k !== "thought" && k !== "thoughtSignature");
}

function noteData(notes: Untranslatable, at: PropertyKey[], p: Part): void {
  const name = dataName(p);
  if (name) notes.add(at, name);
}

function modelTurn(c: Content, i: number, notes: Untranslatable, out: Message[]): OpenCall[] {
  let text = "";
  const calls: ToolCall[] = [];
  c.parts.forEach((p, j) => {
    const at = ["contents", i, "parts", j];
    if (p.functionCall) {
      calls.push({
        id: callId(p.functionCall, i, j),
        type: "function",
        function: { name: p.functionCall.name, arguments: JSON.stringify(p.functionCall.args ?? {}) },
      });
    } else if (p.thought) {
      // thought summaries are the model's own; no other upstream reads them back
    } else if (p.text !== undefined) text += p.text;
    else noteData(notes, at, p);
  });
  out.push({
    role: "assistant",
    content: text || (calls.length ? null : ""),
    ...(calls.length ? { tool_calls: calls } : {}),
  } as Message);
  return calls.map((c) => ({ id: c.id, name: c.function.name, answered: false }));
}

/** The JSON Schema type names of Gemini's Type enum (`OBJECT`, `STRING`, …). */
const lowerType = (t: unknown): unknown => (typeof t === "string" ? t.toLowerCase() : t);

/** Keywords whose values are data, not schemas: their contents are left as they are. */
const DATA_KEYWORDS: ReadonlySet<string> = new Set(["enum", "const", "default", "example", "examples"]);

/**
 * A schema as JSON Schema for the canonical request: Gemini's Schema (`responseSchema`,
 * `parameters`: upper-case types, `nullable`, snake_case keywords, `propertyOrdering`), or a
 * JSON Schema (`responseJsonSchema`, `parametersJsonSchema`), whose types Google's own clients
 * also send upper-case (Gemini CLI's router does).
 */
export function jsonSchemaOf(schema: unknown, gemini: boolean): unknown {
  if (Array.isArray(schema)) return schema.map((s) => jsonSchemaOf(s, gemini));
  if (!isObject(schema)) return schema;
  const out: Json = {};
  let nullable = false;
  for (const [raw, value] of Object.entries(schema)) {
    const key = gemini ? camel(raw) : raw;
    if (key === "type") out.type = Array.isArray(value) ? value.map(lowerType) : lowerType(value);
    else if (DATA_KEYWORDS.has(key)) out[key] = value;
    else if (gemini && key === "nullable") nullable = value === true;
    else if (gemini && key === "propertyOrdering") continue;
    else if ((key === "properties" || key === "$defs" || key === "definitions") && isObject(value))
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, s]) => [name, jsonSchemaOf(s, gemini)]),
      );
    else if (isObject(value) || Array.isArray(value)) out[key] = jsonSchemaOf(value, gemini);
    else out[key] = value;
  }
  if (nullable && typeof out.type === "string") out.type = [out.type, "null"];
  return out;
}

/** Gemini's thinking levels, as reasoning efforts. */
const LEVELS: Readonly<Record<string, string>> = {
  minimal: "minimal",
  low: "low",
  medium: "medium",
  high: "high",
};

/**
 * The reasoning effort a thinking config asks for: a level as it is; a budget by its share of
 * the output bound, as the Messages API reads Claude's (or, without a bound, by its size);
 * 0 is none; -1 (dynamic) leaves the model's default.
 */
function reasoningEffort(
  thinking: z.output<typeof thinkingConfig>,
  maxOutputTokens: number | undefined,
  notes: Untranslatable,
): string | undefined {
  if (thinking.thinkingLevel !== undefined) {
    const level = LEVELS[thinking.thinkingLevel.toLowerCase()];
    if (!level && thinking.thinkingLevel !== "THINKING_LEVEL_UNSPECIFIED")
      notes.add(
        ["generationConfig", "thinkingConfig", "thinkingLevel"],
        "thinkingLevel",
        "effort_unsupported",
      );
    return level;
  }
  const budget = thinking.thinkingBudget;
  if (budget === undefined || budget === -1) return undefined;
  if (budget === 0) return "none";
  if (maxOutputTokens !== undefined) {
    const share = budget / maxOutputTokens;
    for (const effort of ["low", "medium", "high"]) if (share <= EFFORT_SHARE[effort]!) return effort;
    return "high";
  }
  return budget <= 2_048 ? "low" : budget <= 8_192 ? "medium" : "high";
}

/** generationConfig fields the translation reads or that change nothing elsewhere. */
const GENERATION_READ: ReadonlySet<string> = new Set([
  "stopSequences",
  "responseMimeType",
  "responseSchema",
  "responseJsonSchema",
  "responseModalities",
  "candidateCount",
  "maxOutputTokens",
  "temperature",
  "topP",
  "seed",
  "presencePenalty",
  "frequencyPenalty",
  "thinkingConfig",
]);

/** Top-level fields the translation reads; `model` is the path's. */
const TOP_READ: ReadonlySet<string> = new Set([
  "contents",
  "systemInstruction",
  "tools",
  "toolConfig",
  "generationConfig",
  "model",
]);

function generation(
  g: NonNullable<GenerateContentRequest["generationConfig"]>,
  out: ChatRequest,
  notes: Untranslatable,
): void {
  if (g.maxOutputTokens !== undefined) out.max_tokens = g.maxOutputTokens;
  if (g.temperature !== undefined) out.temperature = g.temperature;
  if (g.topP !== undefined) out.top_p = g.topP;
  if (g.stopSequences?.length) out.stop = g.stopSequences;
  if (g.candidateCount !== undefined && g.candidateCount > 1) out.n = g.candidateCount;
  if (g.seed !== undefined) out.seed = g.seed;
  if (g.presencePenalty !== undefined) out.presence_penalty = g.presencePenalty;
  if (g.frequencyPenalty !== undefined) out.frequency_penalty = g.frequencyPenalty;
  const mime = g.responseMimeType?.toLowerCase();
  if (mime === "application/json") {
    const schema =
      g.responseJsonSchema !== undefined
        ? jsonSchemaOf(g.responseJsonSchema, false)
        : g.responseSchema !== undefined
          ? jsonSchemaOf(g.responseSchema, true)
          : undefined;
    out.response_format = isObject(schema)
      ? { type: "json_schema", json_schema: { name: "output", schema } }
      : { type: "json_object" };
  } else if (mime !== undefined && mime !== "text/plain")
    notes.add(
      ["generationConfig", "responseMimeType"],
      `responseMimeType ${g.responseMimeType}`,
      "structured_outputs_unsupported",
    );
  if (g.responseModalities?.some((m) => m.toUpperCase() !== "TEXT"))
    notes.add(["generationConfig", "responseModalities"], "responseModalities");
  if (g.thinkingConfig) {
    const effort = reasoningEffort(g.thinkingConfig, g.maxOutputTokens, notes);
    if (effort !== undefined) out.reasoning_effort = effort;
  }
  for (const field of Object.keys(g))
    if (!GENERATION_READ.has(field)) notes.add(["generationConfig", field], field);
}

function toolsOf(req: GenerateContentRequest, out: ChatRequest, notes: Untranslatable): void {
  const tools: { type: "function"; function: Json & { name: string } }[] = [];
  req.tools?.forEach((t, i) => {
    for (const key of Object.keys(t)) if (key !== "functionDeclarations") notes.add(["tools", i, key], key);
    t.functionDeclarations?.forEach((f, j) => {
      const schema =
        f.parametersJsonSchema !== undefined
          ? jsonSchemaOf(f.parametersJsonSchema, false)
          : f.parameters !== undefined
            ? jsonSchemaOf(f.parameters, true)
            : { type: "object", properties: {} };
      for (const key of Object.keys(f))
        if (!["name", "description", "parameters", "parametersJsonSchema"].includes(key))
          notes.add(["tools", i, "functionDeclarations", j, key], key);
      tools.push({
        type: "function",
        function: {
          name: f.name,
          ...(f.description === undefined ? {} : { description: f.description }),
          parameters: schema,
        },
      });
    });
  });
  if (tools.length) out.tools = tools;
  const config = req.toolConfig?.functionCallingConfig;
  for (const key of Object.keys(req.toolConfig ?? {}))
    if (key !== "functionCallingConfig") notes.add(["toolConfig", key], key);
  if (!config || !tools.length) return;
  const allowed = config.allowedFunctionNames ?? [];
  switch (config.mode) {
    case "NONE":
      out.tool_choice = "none";
      break;
    case "ANY":
      if (allowed.length === 1) out.tool_choice = { type: "function", function: { name: allowed[0]! } };
      else {
        out.tool_choice = "required";
        if (allowed.length)
          notes.add(["toolConfig", "functionCallingConfig", "allowedFunctionNames"], "allowedFunctionNames");
      }
      break;
    default:
      // AUTO, VALIDATED (calls checked against their schema, which the upstream's own decoding does), unset
      if (config.mode !== undefined) out.tool_choice = "auto";
      if (allowed.length)
        notes.add(["toolConfig", "functionCallingConfig", "allowedFunctionNames"], "allowedFunctionNames");
  }
}

/**
 * The canonical request (docs/apis.md, "Gemini API"): the path's model, the system
 * instruction and the turns as messages (function calls as tool calls, their responses as tool
 * messages ahead of the turn's other parts), the generation config as chat completions' fields.
 * What it cannot carry (safety settings, cached content, Google's own tools, media it has no
 * part for, topK, …) is listed for the upstreams that translate.
 */
export function canonicalRequest(
  req: GenerateContentRequest,
  model: string,
  stream: boolean,
): { request: ChatRequest; untranslated: Untranslated[] } {
  const notes = new Untranslatable();
  const messages: Message[] = [];
  if (req.systemInstruction) {
    const texts: string[] = [];
    req.systemInstruction.parts.forEach((p, j) => {
      if (p.text !== undefined) texts.push(p.text);
      else noteData(notes, ["systemInstruction", "parts", j], p);
    });
    const text = texts.join("\n");
    if (text) messages.push({ role: "system", content: text });
  }
  let open: OpenCall[] = [];
  req.contents.forEach((c, i) => {
    if (c.role === "model") open = modelTurn(c, i, notes, messages);
    else {
      userTurn(c, i, open, notes, messages);
      open = [];
    }
  });
  const out: ChatRequest = { model, messages };
  if (stream) out.stream = true;
  if (req.generationConfig) generation(req.generationConfig, out, notes);
  toolsOf(req, out, notes);
  for (const field of Object.keys(req)) if (!TOP_READ.has(field)) notes.add([field], field);
  return { request: out, untranslated: notes.list };
}

/** Whether the client asked for thought summaries (the answer's reasoning as `thought` parts). */
export function includesThoughts(req: GenerateContentRequest): boolean {
  return req.generationConfig?.thinkingConfig?.includeThoughts === true;
}
