/**
 * Mock of the Gemini API's `models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`, for the gateway's tests and the benchmark. It answers in
 * Gemini's shapes (the examples of ai.google.dev/api/generate-content) and validates requests
 * as the real API does: an unknown field anywhere is 400 INVALID_ARGUMENT ("Unknown name"), a
 * role other than user or model is 400, a schema keyword Gemini's Schema lacks is 400, a
 * function response turn must answer every call of the turn before it, and a model turn's
 * function call must carry the thoughtSignature this mock attached (400 "Function call is
 * missing a thought_signature"), as newer Gemini models do. A wrong `x-goog-api-key` (none of
 * `apiKey`'s) is 400 with reason API_KEY_INVALID; a missing one is 403 PERMISSION_DENIED; a key
 * of `rateLimitedKeys` is 429 RESOURCE_EXHAUSTED. Field names are checked in the lowerCamelCase
 * the SDKs send (the real API also takes snake_case, which this mock does not read).
 *
 * `models/{model}:countTokens` answers `{totalTokens}` for `{contents}` or
 * `{generateContentRequest}` (which must name its model, as the real API requires), counted as
 * the prompt tokens below.
 *
 * A `responseMimeType: application/json` with a `responseSchema` or `responseJsonSchema` makes
 * the text a JSON document of that schema (mockArguments; two pieces when streamed, 2
 * candidate tokens), as the real models follow it.
 *
 * Directives in the text of the last user turn (`mock:` …):
 *   tokens=N        answer N words (candidatesTokenCount N), capped by maxOutputTokens (then MAX_TOKENS)
 *   tool            one get_weather call; tools=2: get_weather and get_time in one turn
 *   call=NAME       one call of the request's function NAME, its args filled from its parameters
 *                   (mockArguments); text as usual when the request has no such function
 *   thinking=N      thoughtsTokenCount N;  cache: cachedContentTokenCount 5
 *   finish=REASON   the candidate's finishReason (SAFETY, RECITATION, …)
 *   blocked         promptFeedback.blockReason SAFETY and no candidates
 *   status=CODE     HTTP CODE with Gemini's error body (429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, …)
 *   error-after=K   stream: an error object after K text chunks
 *   hang, drop-after=K, latency=MS
 * Prompt tokens are the words of the system instruction and all contents (at least 1).
 *
 * Embeddings: `models/{model}:embedContent` (`{content, taskType?, title?,
 * outputDimensionality?}`, `model` optional) answers `{embedding: {values}}`;
 * `:batchEmbedContents` (`{requests: [...]}`, at most 100, each with `model` naming the
 * path's model as `models/{model}`) answers `{embeddings: [{values}]}`, each
 * mockVector(text, outputDimensionality ?? 16) (./mock-provider.ts). Unknown fields are 400 as
 * above; a content must have parts, the parts text; outputDimensionality from 1 to 3072. As
 * Gemini, no usage is reported. Directives in the texts: status=CODE, hang.
 *
 * Agent mode (`agent: true`, ./mock-agent.ts): directives are not read; a turn whose last user
 * turn holds function responses is answered with the text quoting them, any other with a call
 * of the shell tool among the declarations (Gemini CLI's `run_shell_command`); a request for
 * JSON of a schema (Gemini CLI's model router) with a JSON document of it.
 *
 * Run as a process: node test/support/mock-gemini-upstream.ts --port 0 --latency 20
 */

import { type AgentTool, agentAnswer, agentCall, agentNoShell } from "./mock-agent.ts";
import type { MockUpstream, MockUpstreamOptions } from "./mock-openai-upstream.ts";
import {
  countOf,
  countWords,
  directives,
  isMain,
  keySet,
  MOCK_DIMENSIONS,
  type MockRequest,
  mockArguments,
  mockId,
  mockVector,
  type Reply,
  replyWords,
  runMockCli,
  sseEvent,
  startMockProvider,
} from "./mock-provider.ts";

export const MOCK_CACHED = 5;

const TOP = new Set([
  "contents",
  "systemInstruction",
  "tools",
  "toolConfig",
  "generationConfig",
  "safetySettings",
  "cachedContent",
]);
const GENERATION = new Set([
  "maxOutputTokens",
  "temperature",
  "topP",
  "topK",
  "stopSequences",
  "candidateCount",
  "seed",
  "presencePenalty",
  "frequencyPenalty",
  "responseMimeType",
  "responseSchema",
  "responseJsonSchema",
  "responseModalities",
  "thinkingConfig",
  "responseLogprobs",
  "logprobs",
  "mediaResolution",
  "speechConfig",
  "enableEnhancedCivicAnswers",
]);
/** Tool kinds of the real API (one Tool object may hold several). */
const TOOL = new Set([
  "functionDeclarations",
  "googleSearch",
  "googleSearchRetrieval",
  "codeExecution",
  "urlContext",
  "computerUse",
  "fileSearch",
  "googleMaps",
]);
const DECLARATION = new Set([
  "name",
  "description",
  "parameters",
  "parametersJsonSchema",
  "response",
  "responseJsonSchema",
  "behavior",
]);
const PART = new Set([
  "text",
  "inlineData",
  "functionCall",
  "functionResponse",
  "thoughtSignature",
  "thought",
  "fileData",
  "executableCode",
  "codeExecutionResult",
  "videoMetadata",
]);
const SCHEMA = new Set([
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
const STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

class Invalid extends Error {}
const invalid = (message: string): never => {
  throw new Invalid(message);
};
const unknown = (path: string, name: string): never =>
  invalid(`Invalid JSON payload received. Unknown name "${name}" at '${path}': Cannot find field.`);

function errorBody(code: number, message: string, details?: unknown[]) {
  return { error: { code, message, status: STATUS[code] ?? "UNKNOWN", ...(details ? { details } : {}) } };
}

function checkKeys(value: any, allowed: Set<string>, path: string): void {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    invalid(`Invalid value at '${path}'`);
  for (const key of Object.keys(value)) if (!allowed.has(key)) unknown(path, key);
}

function checkSchema(schema: any, path: string): void {
  checkKeys(schema, SCHEMA, path);
  for (const [name, s] of Object.entries(schema.properties ?? {}))
    checkSchema(s, `${path}.properties[${name}]`);
  if (schema.items) checkSchema(schema.items, `${path}.items`);
  for (const [i, s] of (schema.anyOf ?? []).entries()) checkSchema(s, `${path}.any_of[${i}]`);
}

/** The signatures this mock attached to function calls: a replayed one must be one of them. */
const issued = new Set<string>();

function validate(body: any): { promptWords: number; lastUser: string } {
  checkKeys(body, TOP, "");
  if (!Array.isArray(body.contents) || !body.contents.length)
    invalid("* GenerateContentRequest.contents: contents is not specified");
  let words = 0;
  if (body.systemInstruction) {
    checkKeys(body.systemInstruction, new Set(["parts", "role"]), "system_instruction");
    for (const p of body.systemInstruction.parts ?? []) words += countWords(p.text ?? "");
  }
  for (const [i, tool] of (body.tools ?? []).entries()) {
    checkKeys(tool, TOOL, `tools[${i}]`);
    for (const [j, f] of (tool.functionDeclarations ?? []).entries()) {
      checkKeys(f, DECLARATION, `tools[${i}].function_declarations[${j}]`);
      if (f.parameters) checkSchema(f.parameters, `tools[${i}].function_declarations[${j}].parameters`);
      if (f.parameters && f.parametersJsonSchema)
        invalid(
          `tools[${i}].function_declarations[${j}]: parameters and parameters_json_schema cannot both be set`,
        );
      words += countWords(JSON.stringify(f));
    }
  }
  if (body.toolConfig) {
    checkKeys(body.toolConfig, new Set(["functionCallingConfig"]), "tool_config");
    const mode = body.toolConfig.functionCallingConfig?.mode;
    if (!["AUTO", "ANY", "NONE", "VALIDATED"].includes(mode))
      invalid(`Invalid value at 'tool_config.function_calling_config.mode'`);
  }
  const g = body.generationConfig ?? {};
  checkKeys(g, GENERATION, "generation_config");
  if (g.responseSchema) checkSchema(g.responseSchema, "generation_config.response_schema");
  if (g.responseSchema && g.responseJsonSchema)
    invalid("generation_config: response_schema and response_json_schema cannot both be set");
  if (g.thinkingConfig)
    checkKeys(
      g.thinkingConfig,
      new Set(["thinkingBudget", "includeThoughts", "thinkingLevel"]),
      "generation_config.thinking_config",
    );
  let callsBefore = 0;
  let lastUser = "";
  body.contents.forEach((c: any, i: number) => {
    checkKeys(c, new Set(["role", "parts"]), `contents[${i}]`);
    // a content without a role is the user's (the REST docs' single-turn examples send none)
    if (c.role !== undefined && c.role !== "user" && c.role !== "model")
      invalid("Please use a valid role: user, model.");
    if (!Array.isArray(c.parts) || !c.parts.length) invalid(`contents[${i}].parts: must not be empty`);
    let calls = 0;
    let responses = 0;
    let text = "";
    c.parts.forEach((p: any, j: number) => {
      checkKeys(p, PART, `contents[${i}].parts[${j}]`);
      if (p.inlineData)
        checkKeys(p.inlineData, new Set(["mimeType", "data"]), `contents[${i}].parts[${j}].inline_data`);
      if (p.functionCall) {
        if (c.role !== "model") invalid(`contents[${i}]: function calls belong to model turns`);
        checkKeys(
          p.functionCall,
          new Set(["name", "args", "id"]),
          `contents[${i}].parts[${j}].function_call`,
        );
        if (calls === 0 && !issued.has(p.thoughtSignature))
          invalid(
            `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${p.functionCall.name}\` , position ${j + 1}.`,
          );
        calls++;
      }
      if (p.functionResponse) {
        checkKeys(
          p.functionResponse,
          new Set(["name", "response", "id"]),
          `contents[${i}].parts[${j}].function_response`,
        );
        if (typeof p.functionResponse.response !== "object")
          invalid(`contents[${i}].parts[${j}].function_response.response: must be an object`);
        responses++;
        text += ` ${JSON.stringify(p.functionResponse.response)}`;
      }
      if (typeof p.text === "string") text += ` ${p.text}`;
    });
    if (callsBefore && responses !== callsBefore)
      invalid(
        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
      );
    callsBefore = calls;
    words += countWords(text);
    if (c.role !== "model") lastUser = text;
  });
  return { promptWords: Math.max(1, words), lastUser };
}

interface Plan {
  candidates: number;
  /** a thought summary before the text (thinking=N with includeThoughts) */
  thought?: string | undefined;
  words: string[];
  calls: { name: string; args: Record<string, unknown> }[];
  finish: string;
  usage: Record<string, number>;
  model: string;
  id: string;
}

/** Gemini's Schema (upper-case types) as the JSON Schema mockArguments reads. */
function lowerTypes(schema: any): any {
  if (Array.isArray(schema)) return schema.map(lowerTypes);
  if (schema === null || typeof schema !== "object") return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([k, v]) => [
      k,
      k === "type" && typeof v === "string"
        ? v.toLowerCase()
        : k === "properties"
          ? Object.fromEntries(Object.entries(v as object).map(([n, x]) => [n, lowerTypes(x)]))
          : k === "items"
            ? lowerTypes(v)
            : v,
    ]),
  );
}

/** A function's parameters as JSON Schema, whichever way it declared them. */
const parametersOf = (f: any) => f.parametersJsonSchema ?? lowerTypes(f.parameters);

/**
 * The schema of a structured answer, when the request asks for JSON of one (Google's clients
 * send upper-case types in a JSON schema too: Gemini CLI's router does).
 */
function answerSchema(g: any): unknown {
  if (g.responseMimeType !== "application/json") return undefined;
  const schema = g.responseJsonSchema ?? g.responseSchema;
  return schema ? lowerTypes(schema) : undefined;
}

function plan(body: any, model: string, promptWords: number, d: Map<string, string>): Plan {
  const g = body.generationConfig ?? {};
  const bound = g.maxOutputTokens ?? 8192;
  const calls: Plan["calls"] = [];
  if (d.has("tool") || d.has("tools")) {
    calls.push({ name: "get_weather", args: { city: "Paris" } });
    if (countOf(d, "tools") === 2) calls.push({ name: "get_time", args: { timezone: "CET" } });
  }
  const declared = (body.tools ?? []).flatMap(
    (t: { functionDeclarations?: unknown[] }) => t.functionDeclarations ?? [],
  );
  const called = declared.find((f: { name?: unknown }) => f.name === d.get("call"));
  if (called) calls.push({ name: called.name, args: mockArguments(parametersOf(called)) });
  const thoughts = countOf(d, "thinking") ?? 0;
  const schema = calls.length ? undefined : answerSchema(g);
  let n = calls.length ? 0 : schema ? 2 : (countOf(d, "tokens") ?? 10);
  let finish = d.get("finish") || "STOP";
  if (n + thoughts >= bound) {
    n = Math.max(0, bound - thoughts);
    finish = "MAX_TOKENS";
  }
  const candidates = g.candidateCount ?? 1;
  const json = schema ? JSON.stringify(mockArguments(schema)) : undefined;
  return {
    candidates,
    thought: thoughts && g.thinkingConfig?.includeThoughts ? "Let me think this through." : undefined,
    words: json && n === 2 ? [json.slice(0, json.length >> 1), json.slice(json.length >> 1)] : replyWords(n),
    calls,
    finish,
    model,
    id: mockId("resp_"),
    usage: {
      promptTokenCount: promptWords,
      candidatesTokenCount: (n + calls.length * 6) * candidates,
      totalTokenCount: promptWords + (n + calls.length * 6) * candidates + thoughts,
      ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
      ...(d.has("cache") ? { cachedContentTokenCount: 5 } : {}),
    },
  };
}

function callParts(p: Plan) {
  return p.calls.map((c, i) => {
    if (i > 0) return { functionCall: c };
    // Gemini signs the first function call of a turn (thought signatures docs)
    // bytes whose base64 has + and /, which an id must carry safely
    const signature = Buffer.concat([Buffer.from([0xfb, 0xef, 0xff]), Buffer.from(mockId("sig"))]).toString(
      "base64",
    );
    issued.add(signature);
    return { functionCall: c, thoughtSignature: signature };
  });
}

function candidate(index: number, parts: unknown[], finish?: string) {
  return { content: { parts, role: "model" }, ...(finish ? { finishReason: finish } : {}), index };
}

function whole(p: Plan) {
  const parts = [
    ...(p.thought ? [{ text: p.thought, thought: true }] : []),
    ...(p.words.length ? [{ text: p.words.join("") }] : []),
    ...callParts(p),
  ];
  return {
    candidates: Array.from({ length: p.candidates }, (_, i) => candidate(i, parts, p.finish)),
    usageMetadata: p.usage,
    modelVersion: p.model,
    responseId: p.id,
  };
}

/** One event per word (the usage so far on each, as Gemini sends it), the calls and finish last. */
function streamEvents(p: Plan): string[] {
  const out: string[] = [];
  const meta = { modelVersion: p.model, responseId: p.id };
  if (p.thought)
    out.push(
      sseEvent({
        candidates: [candidate(0, [{ text: p.thought, thought: true }])],
        usageMetadata: {
          promptTokenCount: p.usage.promptTokenCount,
          totalTokenCount: p.usage.promptTokenCount,
        },
        ...meta,
      }),
    );
  p.words.forEach((w, i) => {
    const usage = {
      ...p.usage,
      candidatesTokenCount: i + 1,
      totalTokenCount: p.usage.promptTokenCount! + i + 1,
    };
    out.push(sseEvent({ candidates: [candidate(0, [{ text: w }])], usageMetadata: usage, ...meta }));
  });
  const calls = callParts(p);
  out.push(
    sseEvent({
      candidates: [candidate(0, calls.length ? calls : [{ text: "" }], p.finish)],
      usageMetadata: p.usage,
      ...meta,
    }),
  );
  return out;
}

const EMBED = new Set(["model", "content", "taskType", "title", "outputDimensionality"]);
const TASK_TYPES = new Set([
  "TASK_TYPE_UNSPECIFIED",
  "RETRIEVAL_QUERY",
  "RETRIEVAL_DOCUMENT",
  "SEMANTIC_SIMILARITY",
  "CLASSIFICATION",
  "CLUSTERING",
  "QUESTION_ANSWERING",
  "FACT_VERIFICATION",
  "CODE_RETRIEVAL_QUERY",
]);
/** The most requests one batchEmbedContents takes. */
const MAX_BATCH = 100;

/** One EmbedContentRequest checked as Gemini does: its text and the dimensions asked for. */
function embedRequest(r: any, path: string, model: string, batched: boolean): { text: string; dims: number } {
  checkKeys(r, EMBED, path);
  if (batched && r.model === undefined) invalid(`* ${path}.model: model is required`);
  if (r.model !== undefined && r.model !== `models/${model}`)
    invalid(`* ${path}.model: model must match the model of the request (models/${model})`);
  if (r.content === undefined) invalid(`* ${path}.content: content is not specified`);
  checkKeys(r.content, new Set(["parts", "role"]), `${path}.content`);
  if (!Array.isArray(r.content.parts) || !r.content.parts.length)
    invalid(`* ${path}.content.parts: contents.parts must not be empty`);
  let text = "";
  r.content.parts.forEach((p: any, j: number) => {
    checkKeys(p, PART, `${path}.content.parts[${j}]`);
    if (typeof p.text !== "string") invalid(`* ${path}.content.parts[${j}]: only text can be embedded`);
    text += (j ? " " : "") + p.text;
  });
  if (r.taskType !== undefined && !TASK_TYPES.has(r.taskType))
    invalid(
      `Invalid value at '${path}.task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), "${r.taskType}"`,
    );
  const dims = r.outputDimensionality;
  if (dims !== undefined && (!Number.isInteger(dims) || dims < 1 || dims > 3072))
    invalid(`* ${path}.output_dimensionality: must be between 1 and 3072`);
  return { text, dims: dims ?? MOCK_DIMENSIONS };
}

function answerEmbeddings(request: MockRequest, reply: Reply, model: string, batch: boolean) {
  let asked: Array<{ text: string; dims: number }>;
  try {
    const body = request.body;
    if (!batch) asked = [embedRequest(body, "EmbedContentRequest", model, false)];
    else {
      checkKeys(body, new Set(["requests"]), "BatchEmbedContentsRequest");
      if (!Array.isArray(body.requests) || !body.requests.length)
        invalid("* BatchEmbedContentsRequest.requests: requests is not specified");
      if (body.requests.length > MAX_BATCH)
        invalid(`* BatchEmbedContentsRequest.requests: at most ${MAX_BATCH} requests can be in one batch`);
      asked = body.requests.map((r: unknown, i: number) =>
        embedRequest(r, `BatchEmbedContentsRequest.requests[${i}]`, model, true),
      );
    }
  } catch (err) {
    if (err instanceof Invalid) return reply.json(400, errorBody(400, err.message));
    throw err;
  }
  const d = directives(asked.map((a) => a.text).join(" "));
  if (d.has("hang")) return reply.hang();
  const status = countOf(d, "status");
  if (status !== undefined && status >= 400)
    return reply.json(
      status,
      errorBody(
        status,
        status === 429 ? "Resource has been exhausted (e.g. check quota)." : `The mock answered ${status}.`,
      ),
    );
  const vectors = asked.map((a) => ({ values: mockVector(a.text, a.dims) }));
  reply.json(200, batch ? { embeddings: vectors } : { embedding: vectors[0] });
}

/** The text a function response gives the agent: Gemini CLI's `output`, else the whole response. */
function responseText(response: any): string {
  if (typeof response?.output === "string") return response.output;
  if (typeof response?.result === "string") return response.result;
  return JSON.stringify(response ?? {});
}

/** Agent mode's answer (./mock-agent.ts): a call of the shell tool, or the text after its results. */
function agentPlan(body: any, model: string, promptWords: number): Plan {
  const lastUser = [...body.contents].reverse().find((c: any) => c.role !== "model");
  const results = (lastUser?.parts ?? []).filter((p: any) => p.functionResponse);
  const declared: AgentTool[] = (body.tools ?? []).flatMap((t: any) =>
    (t.functionDeclarations ?? []).map((f: any) => ({
      name: f.name,
      schema: parametersOf(f),
      description: f.description,
    })),
  );
  // a structured request (Gemini CLI's model router) gets JSON of its schema, as a model writes it
  const schema = answerSchema(body.generationConfig ?? {});
  if (schema && !results.length) {
    const json = JSON.stringify(mockArguments(schema));
    return {
      candidates: 1,
      words: [json],
      calls: [],
      finish: "STOP",
      model,
      id: mockId("resp_"),
      usage: { promptTokenCount: promptWords, candidatesTokenCount: 1, totalTokenCount: promptWords + 1 },
    };
  }
  const found = results.length ? undefined : agentCall(declared);
  // Gemini has no free-form tools: their calls take the one string as arguments
  const call = found && ("text" in found ? { name: found.name, args: { input: found.text } } : found);
  const text = results.length
    ? agentAnswer(results.map((r: any) => responseText(r.functionResponse.response)).join("\n"))
    : call
      ? ""
      : agentNoShell(declared);
  const words = text ? text.split(" ").map((w, i) => (i ? ` ${w}` : w)) : [];
  const calls = call ? [{ name: call.name, args: "input" in call ? call.input : call.args }] : [];
  const candidates = words.length + calls.length * 6;
  return {
    candidates: 1,
    words,
    calls,
    finish: "STOP",
    model,
    id: mockId("resp_"),
    usage: {
      promptTokenCount: promptWords,
      candidatesTokenCount: candidates,
      totalTokenCount: promptWords + candidates,
    },
  };
}

/** `:countTokens`: the prompt tokens of the contents, or of a whole request (which names its model). */
function countTokens(body: any, reply: Reply): void {
  let promptWords: number;
  try {
    checkKeys(body, new Set(["contents", "generateContentRequest"]), "");
    if (body.contents && body.generateContentRequest)
      invalid("Only one of contents and generate_content_request may be set.");
    if (body.generateContentRequest) {
      const { model, ...rest } = body.generateContentRequest;
      if (typeof model !== "string" || !model.startsWith("models/"))
        invalid("* GenerateContentRequest.model: unexpected model name format");
      promptWords = validate(rest).promptWords;
    } else promptWords = validate({ contents: body.contents }).promptWords;
  } catch (err) {
    if (err instanceof Invalid) {
      reply.json(400, errorBody(400, err.message));
      return;
    }
    throw err;
  }
  reply.json(200, {
    totalTokens: promptWords,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: promptWords }],
  });
}

function answer(
  request: MockRequest,
  reply: Reply,
  validKeys: ReadonlySet<string> | undefined,
  rateLimited: ReadonlySet<string> | undefined,
  agent: boolean,
) {
  const match =
    /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent|countTokens|embedContent|batchEmbedContents)$/.exec(
      request.path,
    );
  if (request.method !== "POST" || !match) return reply.json(404, errorBody(404, "Not found"));
  const key = request.headers["x-goog-api-key"];
  if (validKeys !== undefined && !key)
    return reply.json(
      403,
      errorBody(
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      ),
    );
  if (validKeys !== undefined && !(typeof key === "string" && validKeys.has(key)))
    return reply.json(
      400,
      errorBody(400, "API key not valid. Please pass a valid API key.", [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "API_KEY_INVALID",
          domain: "googleapis.com",
        },
      ]),
    );
  if (typeof key === "string" && rateLimited?.has(key))
    return reply.json(429, errorBody(429, "Resource has been exhausted (e.g. check quota)."));
  if (match[2] === "embedContent" || match[2] === "batchEmbedContents")
    return answerEmbeddings(request, reply, decodeURIComponent(match[1]!), match[2] === "batchEmbedContents");
  if (match[2] === "countTokens") return countTokens(request.body, reply);
  const stream = match[2] === "streamGenerateContent";
  if (stream && request.query.get("alt") !== "sse")
    return reply.json(400, errorBody(400, "the mock streams SSE only: ?alt=sse"));
  let checked: ReturnType<typeof validate>;
  try {
    checked = validate(request.body);
  } catch (err) {
    if (err instanceof Invalid) return reply.json(400, errorBody(400, err.message));
    throw err;
  }
  if (agent) {
    const p = agentPlan(request.body, decodeURIComponent(match[1]!), checked.promptWords);
    if (request.received) request.received.usage = p.usage;
    return stream ? reply.sse(streamEvents(p)) : reply.json(200, whole(p));
  }
  const d = directives(checked.lastUser);
  if (d.has("hang")) return reply.hang();
  const status = countOf(d, "status");
  if (status !== undefined && status >= 400)
    return reply.json(
      status,
      errorBody(
        status,
        status === 429 ? "Resource has been exhausted (e.g. check quota)." : `The mock answered ${status}.`,
      ),
    );
  const model = decodeURIComponent(match[1]!);
  if (d.has("blocked")) {
    const blocked = {
      promptFeedback: { blockReason: "SAFETY" },
      usageMetadata: { promptTokenCount: checked.promptWords, totalTokenCount: checked.promptWords },
      modelVersion: model,
    };
    return stream ? reply.sse([sseEvent(blocked)]) : reply.json(200, blocked);
  }
  const p = plan(request.body, model, checked.promptWords, d);
  if (!stream) return d.has("drop-after") ? reply.drop() : reply.json(200, whole(p));
  const events = streamEvents(p);
  const errorAfter = countOf(d, "error-after");
  if (errorAfter !== undefined)
    return reply.sse([
      ...events.slice(0, errorAfter),
      sseEvent(errorBody(503, "The model is overloaded. Please try again later.")),
    ]);
  const dropAfter = countOf(d, "drop-after");
  if (dropAfter !== undefined) return reply.sse(events, { stopAfter: dropAfter, kind: "drop" });
  reply.sse(events);
}

export function startMockGemini(
  options: MockUpstreamOptions & { record?: boolean } = {},
): Promise<MockUpstream> {
  const validKeys = keySet(options.apiKey);
  return startMockProvider(
    (request, reply) => answer(request, reply, validKeys, options.rateLimitedKeys, options.agent === true),
    options,
  );
}

if (isMain(import.meta.url)) void runMockCli("mock-gemini-upstream", startMockGemini);
