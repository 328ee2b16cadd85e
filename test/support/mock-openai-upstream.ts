/**
 * Mock upstream model provider speaking OpenAI's wire format for
 * `POST /v1/chat/completions` (JSON and SSE), `POST /v1/responses` (OpenAI's Responses API,
 * JSON and SSE, with the web_search tool: ./mock-openai-responses.ts) and `GET /v1/models`.
 *
 * Used by the gateway's end-to-end tests and by the benchmark, so it is
 * deterministic, quiet (no logging) and cheap per request.
 *
 * Behaviour is steered by directives in the text of the LAST `user` message:
 *   mock:tokens=N       completion length in words/tokens (capped by max_completion_tokens ?? max_tokens)
 *   mock:status=CODE    answer HTTP CODE (400..599) with an OpenAI error envelope
 *   mock:retry-after=S  with mock:status, send `retry-after: S`
 *   mock:context-overflow  answer 400 as OpenAI does for a prompt over the context window
 *                       (code context_length_exceeded, param messages)
 *   mock:latency=MS     delay before the response headers
 *   mock:hang           never answer (until the client closes)
 *   mock:hang-after=K   stream: send K content chunks, then stall forever
 *   mock:drop-after=K   stream: send K content chunks, then destroy the socket; JSON: destroy without answering
 *   mock:no-usage       omit `usage` (JSON) and never send the usage chunk / `usage` keys (stream)
 *   mock:refusal        refusal instead of content
 *   mock:tool           one `get_weather` tool call
 *   mock:call=NAME      one call of the request's tool NAME: a function's arguments filled from its
 *                       parameters, a custom tool's input MOCK_TOOL_TEXT (test/support/mock-provider.ts);
 *                       text as usual when the request has no such tool
 *
 * Without a directive that decides the answer, the request's own settings do, as OpenAI's
 * models follow them: a `tool_choice` that forces a call (`required`: the first function tool;
 * `{type: function, function: {name}}`: that one) calls it, its arguments filled as for
 * mock:call; a `response_format` of type `json_schema` makes the text a JSON document of that
 * schema (mockArguments, in two pieces when streamed; 2 completion tokens).
 *   mock:text=WORD      reply with WORD repeated instead of the default word list
 *   mock:cache          usage says 3 of the prompt tokens were cached
 *   mock:reasoning      the answer reasons first, as vLLM, DeepSeek and SGLang report it:
 *                       `reasoning_content` on the message (stream: its own deltas before the
 *                       content), its words counted as completion and as reasoning_tokens
 *
 * `POST /v1/embeddings` (Azure: `/openai/deployments/{deployment}/embeddings?api-version=…` and
 * `/openai/v1/embeddings`) answers as OpenAI does: `{object: "list", data: [{object:
 * "embedding", index, embedding}], model, usage: {prompt_tokens, total_tokens}}`, each vector
 * mockVector(input, dimensions ?? 16) (./mock-provider.ts), base64 (float32, little-endian)
 * when `encoding_format` says so. The request is checked as OpenAI checks it: only `model`,
 * `input`, `dimensions`, `encoding_format` and `user` (anything else: 400 "Unrecognized
 * request argument supplied"), `input` a non-empty string, or 1 to 2048 non-empty strings, or
 * token ids, or non-empty arrays of token ids, never mixed ("'$.input' is invalid"),
 * `encoding_format` float or base64, `dimensions` from 1 to 3072 and refused by models named
 * `*ada-002`, at most 8192 tokens an input. Tokens: the words of each text, the length of
 * each token array. Directives in the inputs' texts (and the mock's own, and the
 * `x-mock-directives` header): mock:status=CODE, mock:retry-after=S, mock:latency=MS,
 * mock:hang, mock:no-usage.
 *
 * Azure OpenAI mode (`azure: true`): the routes are Azure's,
 * `/openai/deployments/{deployment}/chat/completions?api-version=…` (a missing api-version is
 * 404 "Resource not found", as Azure answers) and `/openai/v1/chat/completions`; the key is the
 * `api-key` header (`apiKey`); every stream opens with Azure's prompt-filter frame (empty
 * `choices`, `prompt_filter_results`, created 0). Besides the directives above:
 *   mock:blocked        400 with Azure's `content_filter` error: the prompt was filtered
 *   mock:filtered       the answer ends with finish_reason content_filter
 *   mock:error-event    stream: after the prompt-filter frame, an error object inside the 200 stream
 *
 * `setDirectives(text)` gives one mock directives of its own, applied to every request as if
 * appended to its last user message: how a test makes one of several upstreams fail. A
 * request's `x-mock-directives` header is applied the same way (a provider configured with
 * that header is a failing deployment on a healthy mock).
 *
 * Directives are read from the last user message, or from the last message when that is a tool
 * result (a model that has its tool's result answers it; as the Anthropic and Gemini mocks read
 * the last user turn, where tool results are).
 *
 * Tools are checked as OpenAI does: each a function (`function.name`) or a custom tool
 * (`custom.name`), any other type 400 `invalid_value`; an assistant message's custom tool call
 * needs `custom.name` and `custom.input`.
 *
 * Prompt tokens are the words of the messages' texts by default. With `promptCount: "template"`
 * (`--prompt-count template`) the mock counts as a chat template does, more than the text:
 * ceil(characters of the messages' JSON / 4) + 3, the framing, roles and keys included.
 *
 * A `model` of OpenAI's reasoning families (o1, o3, gpt-5, …) is refused with OpenAI's 400
 * `unsupported_parameter` when the body carries `max_tokens`, as OpenAI refuses it.
 *
 * Judge mode: when the requested `model` contains "guard" (in any case: "Llama-Guard-3-8B"),
 * the mock answers as a Llama Guard safety judge instead, classifying the text of the LAST
 * message, whatever its role (the caller's message for an input review, the assistant's
 * answer for an output review):
 *   contains "judgeunsafe"   content "unsafe\nS1"
 *   contains "judgetwo"      content "unsafe\nS1,S10"
 *   contains "judgegarbage"  content "I cannot decide"
 *   contains "judgefail"     HTTP 500 with an OpenAI error envelope (the mock:status=500 one)
 *   otherwise                content "safe"
 * Usage is counted as usual (one completion token per line of the verdict); the directives
 * above still apply, from the last user message (mock:hang, mock:latency, mock:status, ...).
 *
 * Run as a process (for the benchmark):
 *   node test/support/mock-openai-upstream.ts --port 9100 --latency 20 [--chunk-delay 0] [--no-record] [--azure]
 *     [--prompt-count words|template]
 * prints one line `{"url":"http://127.0.0.1:9100/v1"}` and exits cleanly on SIGTERM/SIGINT.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:http";
import { listenForTests } from "./listen.ts";
import { agentAnswer, agentCall, agentNoShell, resultText } from "./mock-agent.ts";
import {
  planAgentResponse,
  planResponse,
  readInput,
  responseEvents,
  responsesProblem,
} from "./mock-openai-responses.ts";
import {
  type Active,
  directives as directiveMap,
  isMain,
  keySet,
  MOCK_DIMENSIONS,
  MOCK_TOOL_TEXT,
  mockArguments,
  mockVector,
  requestTracker,
  runMockCli,
} from "./mock-provider.ts";

export interface MockUpstreamOptions {
  /** Delay before the response headers (default 0); the per-request `mock:latency=MS` directive overrides. */
  latencyMs?: number;
  /** Delay between stream chunks (default 0). */
  chunkDelayMs?: number;
  /**
   * If set, requests must carry `Authorization: Bearer <key>` of one of these keys (a provider
   * account's several keys), else 401 with an OpenAI error envelope.
   */
  apiKey?: string | readonly string[];
  /**
   * Valid keys whose rate limit is reached, as the test sets them now: their requests are
   * answered 429 (OpenAI's `rate_limit_exceeded`; Azure's 429 with `retry-after`), after the key
   * is checked, as the provider does. The provider mocks read the same option.
   */
  rateLimitedKeys?: ReadonlySet<string>;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (random free port). */
  port?: number;
  /** speak as Azure OpenAI (see the file comment) */
  azure?: boolean;
  /**
   * How prompt tokens are counted: "words" (default) of the messages' texts, or "template":
   * ceil(characters of the messages' JSON / 4) + 3, as a chat template counts more than the text.
   */
  promptCount?: "words" | "template";
  /**
   * The scripted agent model (./mock-agent.ts): every answer calls the request's shell tool, or,
   * once its result came back, quotes it; directives are not read. Each answer's usage is
   * noted on its recorded request.
   */
  agent?: boolean;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  at: number;
  /** agent mode: the usage the mock reported in its answer, in its API's own fields */
  usage?: Record<string, unknown>;
}

export interface MockUpstream {
  /** Base URL ending in /v1, e.g. http://127.0.0.1:43123/v1 */
  url: string;
  /** Every chat completion request received, in arrival order (only when options.record !== false). */
  requests: ReceivedRequest[];
  /** Chat requests currently being answered. */
  inFlight(): number;
  /** How many chat requests were closed by the client before the mock finished answering. */
  aborted(): number;
  /** Clears `requests` (in place) and the `aborted` counter. `inFlight` is a live gauge and is not reset. */
  reset(): void;
  /** Directives applied to every request from now on, as if in its last user message ("" for none). */
  setDirectives(text: string): void;
  /** Closes the server and all sockets (including hanging ones) promptly. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Constants and precomputed fragments
// ---------------------------------------------------------------------------

const SYSTEM_FINGERPRINT = "fp_mock0000001";
const DEFAULT_COMPLETION_TOKENS = 10;
const MAX_CHOICES = 128;

/** Words that are each exactly one token (with and without a leading space) in cl100k_base and o200k_base. */
const WORDS = [
  "Hello",
  "world",
  "this",
  "is",
  "a",
  "mock",
  "reply",
  "from",
  "the",
  "model",
  "with",
  "some",
  "simple",
  "words",
  "for",
  "testing",
];
/** JSON string literals of each word as the first piece (no space) and as a later piece (leading space). */
const WORD_FIRST_JSON = WORDS.map((w) => JSON.stringify(w));
const WORD_NEXT_JSON = WORDS.map((w) => JSON.stringify(` ${w}`));

const REFUSAL_TEXT = "I can't help with that.";
const REFUSAL_PIECES = REFUSAL_TEXT.split(" ").map((w, i) => (i === 0 ? w : ` ${w}`));
const REFUSAL_PIECES_JSON = REFUSAL_PIECES.map((p) => JSON.stringify(p));

const TOOL_NAME = "get_weather";
const TOOL_ARGS_PIECES = ['{"', "city", '":"', "Paris", '"}'];
const TOOL_ARGUMENTS = TOOL_ARGS_PIECES.join("");
const TOOL_ARGS_PIECES_JSON = TOOL_ARGS_PIECES.map((p) => JSON.stringify(p));

/** A text in two pieces, as a model streams it. */
function halves(text: string): string[] {
  const cut = Math.ceil(text.length / 2);
  return [text.slice(0, cut), text.slice(cut)];
}

const MODELS_BODY = JSON.stringify({
  object: "list",
  data: [{ id: "mock-model", object: "model", created: 1700000000, owned_by: "mock" }],
});

const SSE_DONE = "data: [DONE]\n\n";

const AZURE_PROMPT_FILTER_FRAME = `data: ${JSON.stringify({
  choices: [],
  created: 0,
  id: "",
  model: "",
  object: "",
  prompt_filter_results: [
    {
      prompt_index: 0,
      content_filter_results: {
        hate: { filtered: false, severity: "safe" },
        self_harm: { filtered: false, severity: "safe" },
        sexual: { filtered: false, severity: "safe" },
        violence: { filtered: false, severity: "safe" },
      },
    },
  ],
})}\n\n`;
const AZURE_STREAM_ERROR = JSON.stringify({
  error: { code: "server_error", message: "The server had an error while processing your request." },
});
/** Azure's answer to a prompt its content filter refuses (learn.microsoft.com content filtering). */
export const AZURE_PROMPT_FILTERED = JSON.stringify({
  error: {
    message:
      "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
    type: null,
    param: "prompt",
    code: "content_filter",
    status: 400,
    innererror: {
      code: "ResponsibleAIPolicyViolation",
      content_filter_result: {
        hate: { filtered: false, severity: "safe" },
        self_harm: { filtered: false, severity: "safe" },
        sexual: { filtered: false, severity: "safe" },
        violence: { filtered: true, severity: "high" },
      },
    },
  },
});
const AZURE_BAD_KEY = JSON.stringify({
  error: {
    code: "401",
    message:
      "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
  },
});
/** Azure's 429 when a deployment's rate limit is reached (it says when to retry, in the header too). */
const AZURE_RATE_LIMITED = JSON.stringify({
  error: {
    code: "429",
    message:
      "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
  },
});
const SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8";
const JSON_CONTENT_TYPE = "application/json";

const INCORRECT_KEY_MESSAGE =
  "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.";
const MISSING_KEY_MESSAGE =
  "You didn't provide an API key. You need to provide your API key in an Authorization header using " +
  "Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from " +
  "https://platform.openai.com/account/api-keys.";
const INVALID_JSON_MESSAGE =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your " +
  "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)";
const INTERNAL_500_MESSAGE =
  "The server had an error while processing your request. " +
  "(upstream http://10.0.0.5:8000/internal failed for key sk-upstream-secret-123)";

// ---------------------------------------------------------------------------
// Ids: random per-process prefix + counter (unique, no per-request randomness)
// ---------------------------------------------------------------------------

const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
function randomB62(len: number): string {
  const bytes = randomBytes(len);
  let s = "";
  for (let i = 0; i < len; i++) s += B62[bytes[i]! % 62];
  return s;
}
function counterB62(n: number, width: number): string {
  let s = "";
  while (n > 0) {
    s = B62[n % 62] + s;
    n = Math.floor(n / 62);
  }
  return s.padStart(width, "0");
}
const ID_PREFIX = randomB62(21);
const CALL_PREFIX = randomB62(16);
const REQ_PREFIX = randomB62(16);
let idCounter = 0;
function nextSeq(): number {
  idCounter = (idCounter + 1) % 218340105584896; // 62^8
  return idCounter;
}

// ---------------------------------------------------------------------------
// Request helpers
// ---------------------------------------------------------------------------

interface Directives {
  tokens: number | undefined;
  status: number | undefined;
  retryAfter: string | undefined;
  latency: number | undefined;
  hang: boolean;
  hangAfter: number | undefined;
  dropAfter: number | undefined;
  noUsage: boolean;
  contextOverflow: boolean;
  refusal: boolean;
  tool: boolean;
  call: string | undefined;
  text: string | undefined;
  cache: boolean;
  blocked: boolean;
  filtered: boolean;
  errorEvent: boolean;
  reasoning: boolean;
}

/** What `mock:reasoning` answers reason; three words, three reasoning tokens. */
export const MOCK_REASONING = "Let me think.";
const MOCK_REASONING_TOKENS = 3;

const DIRECTIVE_RE = /(?<![\w-])mock:([a-z][a-z-]*)(?:=(\S+))?/g;

function parseCount(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^\d+/.exec(v);
  return m ? Number(m[0]) : undefined;
}

function parseDirectives(text: string): Directives {
  const d: Directives = {
    tokens: undefined,
    status: undefined,
    retryAfter: undefined,
    latency: undefined,
    hang: false,
    hangAfter: undefined,
    dropAfter: undefined,
    noUsage: false,
    contextOverflow: false,
    refusal: false,
    tool: false,
    call: undefined,
    text: undefined,
    cache: false,
    blocked: false,
    filtered: false,
    errorEvent: false,
    reasoning: false,
  };
  if (text.indexOf("mock:") === -1) return d;
  DIRECTIVE_RE.lastIndex = 0;
  for (let m = DIRECTIVE_RE.exec(text); m !== null; m = DIRECTIVE_RE.exec(text)) {
    const value = m[2];
    switch (m[1]) {
      case "tokens":
        d.tokens = parseCount(value) ?? d.tokens;
        break;
      case "status": {
        const code = parseCount(value);
        if (code !== undefined && code >= 400 && code <= 599) d.status = code;
        break;
      }
      case "retry-after":
        d.retryAfter = value;
        break;
      case "latency":
        d.latency = parseCount(value) ?? d.latency;
        break;
      case "hang":
        d.hang = true;
        break;
      case "hang-after":
        d.hangAfter = parseCount(value) ?? d.hangAfter;
        break;
      case "drop-after":
        d.dropAfter = parseCount(value) ?? d.dropAfter;
        break;
      case "no-usage":
        d.noUsage = true;
        break;
      case "context-overflow":
        d.contextOverflow = true;
        break;
      case "refusal":
        d.refusal = true;
        break;
      case "tool":
        d.tool = true;
        break;
      case "call":
        d.call = value;
        break;
      case "text":
        if (value !== undefined) d.text = value;
        break;
      case "cache":
        d.cache = true;
        break;
      case "blocked":
        d.blocked = true;
        break;
      case "filtered":
        d.filtered = true;
        break;
      case "error-event":
        d.errorEvent = true;
        break;
      case "reasoning":
        d.reasoning = true;
        break;
    }
  }
  return d;
}

/** Text of a message `content`: a string, or the `text` parts of a content-part array joined by spaces. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let s = "";
  for (const part of content) {
    if (part !== null && typeof part === "object" && typeof (part as { text?: unknown }).text === "string") {
      s = s.length === 0 ? (part as { text: string }).text : `${s} ${(part as { text: string }).text}`;
    }
  }
  return s;
}

/** Judge mode's verdict on a text, as Llama Guard words it; undefined for "answer HTTP 500". */
function judgeVerdict(text: string): string | undefined {
  if (text.includes("judgefail")) return undefined;
  if (text.includes("judgegarbage")) return "I cannot decide";
  if (text.includes("judgetwo")) return "unsafe\nS1,S10";
  if (text.includes("judgeunsafe")) return "unsafe\nS1";
  return "safe";
}

function countWords(s: string): number {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ws = c === 32 || (c >= 9 && c <= 13) || c === 160 || c === 0x2028 || c === 0x2029 || c === 0xfeff;
    if (ws) inWord = false;
    else if (!inWord) {
      inWord = true;
      n++;
    }
  }
  return n;
}

function nonNegativeInt(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined;
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

function nextRequestId(): string {
  return `req_${REQ_PREFIX}${counterB62(nextSeq(), 8)}`;
}

function sendJson(res: ServerResponse, status: number, body: string, headers?: Record<string, string>): void {
  res.writeHead(status, {
    "content-type": JSON_CONTENT_TYPE,
    "content-length": Buffer.byteLength(body),
    "x-request-id": nextRequestId(),
    "openai-version": "2020-10-01",
    ...headers,
  });
  res.end(body);
}

function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type: string,
  param: string | null,
  code: string | null,
  headers?: Record<string, string>,
): void {
  sendJson(res, status, JSON.stringify({ error: { message, type, param, code } }), headers);
}

type ErrorSpec = [message: string, type: string, param: string | null, code: string | null];

/** OpenAI's reasoning models (o1, o3, o4-mini, gpt-5…) refuse `max_tokens`, as OpenAI does. */
const REASONING_MODEL = /^(?:o\d|gpt-5)/;

/** The error OpenAI would send for a given status (used by `mock:status=CODE`). */
function statusError(status: number, model: string): ErrorSpec {
  switch (status) {
    case 400:
      return [
        "Invalid request: the mock was asked to reject this request (mock:status=400).",
        "invalid_request_error",
        null,
        null,
      ];
    case 401:
      return [INCORRECT_KEY_MESSAGE, "invalid_request_error", null, "invalid_api_key"];
    case 403:
      return ["You are not allowed to sample from this model.", "invalid_request_error", null, null];
    case 404:
      return [
        `The model \`${model}\` does not exist or you do not have access to it.`,
        "invalid_request_error",
        null,
        "model_not_found",
      ];
    case 429:
      return [
        "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
        "requests",
        null,
        "rate_limit_exceeded",
      ];
    case 500:
      return [INTERNAL_500_MESSAGE, "server_error", null, null];
    case 502:
      return ["Bad gateway.", "server_error", null, null];
    case 503:
      return ["The engine is currently overloaded, please try again later.", "server_error", null, null];
    case 504:
      return ["Gateway timeout.", "server_error", null, null];
    default:
      return status >= 500
        ? [
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            null,
            null,
          ]
        : [`Request failed with status ${status}.`, "invalid_request_error", null, null];
  }
}

function usageObject(prompt: number, completion: number, cached = 0, reasoning = 0) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion + reasoning,
    total_tokens: prompt + completion + reasoning,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/** text, a refusal, a function call (`tool`) or a custom tool call (`custom`) */
type Kind = "text" | "refusal" | "tool" | "custom";

/** Everything needed to answer one chat completion. */
interface Plan {
  id: string;
  created: number;
  model: string;
  kind: Kind;
  n: number;
  /** Pieces per choice (text words, refusal words, tool-argument or custom-input fragments), as JSON string literals. */
  piecesJson: string[];
  /** the tool called (kind tool or custom) */
  toolName: string;
  /** the whole arguments (tool) or input (custom) */
  toolArguments: string;
  /** Reply text for `kind: "text"` (N words joined by single spaces). */
  text: string;
  finishReason: "stop" | "length" | "tool_calls" | "content_filter";
  completionPerChoice: number;
  promptTokens: number;
  usage: boolean;
  includeUsage: boolean;
  callIdBase: string;
  cached: number;
  /** Azure: the prompt-filter frame opens the stream */
  azure: boolean;
  errorEvent: boolean;
  /** reasoning tokens per choice (mock:reasoning), 0 when the answer does not reason */
  reasoning: number;
}

/** The tool a `tool_choice` forces a call of: `required` the first function, or the named one. */
function forcedTool(body: any): string | undefined {
  const choice = body.tool_choice;
  if (choice === "required") return body.tools?.find((t: any) => t?.type === "function")?.function?.name;
  if (choice?.type === "function" && typeof choice.function?.name === "string") return choice.function.name;
  return undefined;
}

/** The text of a `json_schema` response format: a JSON document of the schema, as a model writes it. */
function structuredText(body: any): string | undefined {
  const format = body.response_format;
  if (format?.type !== "json_schema") return undefined;
  return JSON.stringify(mockArguments(format.json_schema?.schema));
}

/** The request's tool `name` (mock:call=NAME) and what the model writes for it. */
function calledTool(
  body: any,
  name: string | undefined,
): { type: "function" | "custom"; name: string; arguments: string } | undefined {
  if (name === undefined) return undefined;
  for (const tool of body.tools ?? []) {
    if (tool.type === "custom" && tool.custom.name === name)
      return { type: "custom", name, arguments: MOCK_TOOL_TEXT };
    if (tool.type === "function" && tool.function.name === name)
      return { type: "function", name, arguments: JSON.stringify(mockArguments(tool.function.parameters)) };
  }
  return undefined;
}

function replyText(tokens: number, word: string | undefined): string {
  let s = "";
  for (let i = 0; i < tokens; i++) {
    const w = word ?? WORDS[i % WORDS.length]!;
    s = i === 0 ? w : `${s} ${w}`;
  }
  return s;
}

function textPiecesJson(tokens: number, word: string | undefined): string[] {
  const out = new Array<string>(tokens);
  if (word === undefined) {
    for (let i = 0; i < tokens; i++)
      out[i] = i === 0 ? WORD_FIRST_JSON[0]! : WORD_NEXT_JSON[i % WORDS.length]!;
  } else {
    const first = JSON.stringify(word);
    const next = JSON.stringify(` ${word}`);
    for (let i = 0; i < tokens; i++) out[i] = i === 0 ? first : next;
  }
  return out;
}

function callId(plan: Plan, choice: number): string {
  return `call_${plan.callIdBase}${choice === 0 ? "" : `_${choice}`}`;
}

function buildCompletionJson(plan: Plan): string {
  const choices = new Array<unknown>(plan.n);
  for (let i = 0; i < plan.n; i++) {
    let message: Record<string, unknown>;
    if (plan.kind === "text") {
      message = { role: "assistant", content: plan.text, refusal: null };
    } else if (plan.kind === "refusal") {
      message = { role: "assistant", content: null, refusal: REFUSAL_TEXT };
    } else {
      const call =
        plan.kind === "custom"
          ? {
              id: callId(plan, i),
              type: "custom",
              custom: { name: plan.toolName, input: plan.toolArguments },
            }
          : {
              id: callId(plan, i),
              type: "function",
              function: { name: plan.toolName, arguments: plan.toolArguments },
            };
      message = { role: "assistant", content: null, refusal: null, tool_calls: [call] };
    }
    if (plan.reasoning) message.reasoning_content = MOCK_REASONING;
    choices[i] = { index: i, message, logprobs: null, finish_reason: plan.finishReason };
  }
  const body: Record<string, unknown> = {
    id: plan.id,
    object: "chat.completion",
    created: plan.created,
    model: plan.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices,
  };
  if (plan.usage)
    body.usage = usageObject(
      plan.promptTokens,
      plan.completionPerChoice * plan.n,
      plan.cached,
      plan.reasoning * plan.n,
    );
  return JSON.stringify(body);
}

/**
 * The SSE stream as steps: step 0 = the opening chunk of every choice; steps 1..contentSteps = one content
 * chunk each; last step = finish chunks + optional usage chunk + [DONE]. Chunk delays apply between steps.
 */
function buildStreamSteps(plan: Plan): { steps: string[]; contentSteps: number } {
  const head =
    `data: {"id":"${plan.id}","object":"chat.completion.chunk","created":${plan.created},` +
    `"model":${JSON.stringify(plan.model)},"system_fingerprint":"${SYSTEM_FINGERPRINT}","choices":[{"index":`;
  const tail = plan.includeUsage ? '}],"usage":null}\n\n' : "}]}\n\n";
  const chunk = (index: number, delta: string, finish: string): string =>
    `${head}${index},"delta":${delta},"logprobs":null,"finish_reason":${finish}${tail}`;

  const n = plan.n;
  const pieces = plan.piecesJson;
  const steps: string[] = [];

  // Azure's first frame: the prompt's filter annotations, with no choices and created 0
  let open = plan.azure ? AZURE_PROMPT_FILTER_FRAME : "";
  if (plan.errorEvent) {
    steps.push(`${open}data: ${AZURE_STREAM_ERROR}\n\n`);
    return { steps, contentSteps: 0 };
  }
  // the reasoning comes first, as reasoning servers send it: before any content or tool call
  const role = plan.reasoning ? "" : '"role":"assistant",';
  if (plan.reasoning) {
    const delta = `{"role":"assistant","content":null,"reasoning_content":${JSON.stringify(MOCK_REASONING)}}`;
    for (let i = 0; i < n; i++) open += chunk(i, delta, "null");
    steps.push(open);
    open = "";
  }
  for (let i = 0; i < n; i++) {
    let delta: string;
    if (plan.kind === "text") delta = `{${role}"content":"","refusal":null}`;
    else if (plan.kind === "refusal") delta = `{${role}"content":null,"refusal":""}`;
    else if (plan.kind === "custom")
      delta =
        `{${role}"content":null,"tool_calls":[{"index":0,"id":"${callId(plan, i)}",` +
        `"type":"custom","custom":{"name":${JSON.stringify(plan.toolName)},"input":""}}],"refusal":null}`;
    else
      delta =
        `{${role}"content":null,"tool_calls":[{"index":0,"id":"${callId(plan, i)}",` +
        `"type":"function","function":{"name":${JSON.stringify(plan.toolName)},"arguments":""}}],"refusal":null}`;
    open += chunk(i, delta, "null");
  }
  steps.push(open);

  for (let p = 0; p < pieces.length; p++) {
    const piece = pieces[p]!;
    let delta: string;
    if (plan.kind === "text") delta = `{"content":${piece}}`;
    else if (plan.kind === "refusal") delta = `{"refusal":${piece}}`;
    else if (plan.kind === "custom") delta = `{"tool_calls":[{"index":0,"custom":{"input":${piece}}}]}`;
    else delta = `{"tool_calls":[{"index":0,"function":{"arguments":${piece}}}]}`;
    for (let i = 0; i < n; i++) steps.push(chunk(i, delta, "null"));
  }
  const contentSteps = steps.length - 1;

  let end = "";
  const finish = `"${plan.finishReason}"`;
  for (let i = 0; i < n; i++) end += chunk(i, "{}", finish);
  if (plan.includeUsage) {
    end +=
      `data: {"id":"${plan.id}","object":"chat.completion.chunk","created":${plan.created},` +
      `"model":${JSON.stringify(plan.model)},"system_fingerprint":"${SYSTEM_FINGERPRINT}","choices":[],` +
      `"usage":${JSON.stringify(usageObject(plan.promptTokens, plan.completionPerChoice * n, plan.cached, plan.reasoning * n))}}\n\n`;
  }
  end += SSE_DONE;
  steps.push(end);
  return { steps, contentSteps };
}

// ---------------------------------------------------------------------------
// Embeddings
// ---------------------------------------------------------------------------

/** OpenAI's limit on one embedding input (text-embedding-3-*, ada-002). */
const MAX_EMBEDDING_INPUT_TOKENS = 8192;
const EMBEDDING_FIELDS = new Set(["model", "input", "dimensions", "encoding_format", "user"]);
const INVALID_INPUT: ErrorSpec = [
  "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.",
  "invalid_request_error",
  null,
  null,
];

/** OpenAI's float32s, little-endian, in base64. */
export function float32Base64(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((x, i) => {
    bytes.writeFloatLE(x, i * 4);
  });
  return bytes.toString("base64");
}

/** What OpenAI says of an embeddings request it refuses; undefined when it takes it. */
function embeddingsProblem(body: any): ErrorSpec | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return ["The request body must be a JSON object.", "invalid_request_error", null, null];
  for (const field of Object.keys(body))
    if (!EMBEDDING_FIELDS.has(field))
      return [`Unrecognized request argument supplied: ${field}`, "invalid_request_error", null, null];
  if (typeof body.model !== "string" || body.model === "")
    return ["you must provide a model parameter", "invalid_request_error", null, null];
  const input = body.input;
  if (input === undefined)
    return [
      "Missing required parameter: 'input'.",
      "invalid_request_error",
      "input",
      "missing_required_parameter",
    ];
  const isId = (x: unknown) => Number.isInteger(x) && (x as number) >= 0;
  const ok =
    (typeof input === "string" && input.length > 0) ||
    (Array.isArray(input) &&
      input.length > 0 &&
      input.length <= 2048 &&
      (input.every((x) => typeof x === "string" && x.length > 0) ||
        input.every(isId) ||
        input.every((x) => Array.isArray(x) && x.length > 0 && x.every(isId))));
  if (!ok) return INVALID_INPUT;
  const format = body.encoding_format;
  if (format !== undefined && format !== "float" && format !== "base64")
    return [
      `Invalid value: '${format}'. Supported values are: 'float' and 'base64'.`,
      "invalid_request_error",
      "encoding_format",
      "invalid_value",
    ];
  const dims = body.dimensions;
  if (dims !== undefined) {
    if (/ada-002/.test(body.model))
      return ["This model does not support specifying dimensions.", "invalid_request_error", null, null];
    if (!Number.isInteger(dims) || dims < 1)
      return [
        `Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got ${dims} instead.`,
        "invalid_request_error",
        "dimensions",
        "integer_below_min_value",
      ];
    if (dims > 3072)
      return [
        `Invalid value for 'dimensions' = ${dims}. Must be less than or equal to 3072.`,
        "invalid_request_error",
        "dimensions",
        null,
      ];
  }
  if (body.user !== undefined && typeof body.user !== "string")
    return ["Invalid type for 'user': expected a string.", "invalid_request_error", "user", "invalid_type"];
  return undefined;
}

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------

export function startMockUpstream(
  options: MockUpstreamOptions & { record?: boolean } = {},
): Promise<MockUpstream> {
  const defaultLatency = Math.max(0, options.latencyMs ?? 0);
  const chunkDelay = Math.max(0, options.chunkDelayMs ?? 0);
  const azure = options.azure === true;
  const validKeys = keySet(options.apiKey);
  const rateLimited = options.rateLimitedKeys;
  const record = options.record !== false;
  const templateCount = options.promptCount === "template";
  const agent = options.agent === true;
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 0;

  const requests: ReceivedRequest[] = [];
  const tracker = requestTracker();

  function authorized(req: IncomingMessage, res: ServerResponse): boolean {
    if (validKeys === undefined) return true;
    const got = azure ? req.headers["api-key"] : req.headers.authorization;
    const key = azure ? got : typeof got === "string" && got.startsWith("Bearer ") ? got.slice(7) : undefined;
    if (typeof key === "string" && validKeys.has(key)) {
      if (!rateLimited?.has(key)) return true;
      if (azure) sendJson(res, 429, AZURE_RATE_LIMITED, { "retry-after": "6" });
      else sendError(res, 429, ...statusError(429, ""));
      return false;
    }
    if (azure) {
      sendJson(res, 401, AZURE_BAD_KEY);
      return false;
    }
    if (got === undefined || got === "") {
      sendError(res, 401, MISSING_KEY_MESSAGE, "invalid_request_error", null, null);
    } else {
      sendError(res, 401, INCORRECT_KEY_MESSAGE, "invalid_request_error", null, "invalid_api_key");
    }
    return false;
  }

  /**
   * Tracks a POST, records it (when recording), and hands its body on once read: parsed, or
   * `parsed` false when it is not JSON (the record then keeps the raw text).
   */
  function receive(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    onBody: (
      state: ReturnType<typeof tracker.begin>,
      parsed: boolean,
      body: any,
      entry: ReceivedRequest | undefined,
    ) => void,
  ): void {
    const state = tracker.begin(res);
    req.once("error", () => tracker.finish(state));

    const entry: ReceivedRequest | undefined = record
      ? { method: req.method ?? "POST", path, headers: req.headers, body: undefined, at: Date.now() }
      : undefined;
    if (entry !== undefined) requests.push(entry);

    const bufs: Buffer[] = [];
    req.on("data", (b: Buffer) => bufs.push(b));
    req.on("end", () => {
      if (state.closed) return;
      const raw = bufs.length === 1 ? bufs[0]!.toString("utf8") : Buffer.concat(bufs).toString("utf8");
      let body: any;
      let parsed = true;
      try {
        body = JSON.parse(raw);
      } catch {
        parsed = false;
      }
      if (entry !== undefined) entry.body = parsed ? body : raw;
      onBody(state, parsed, body, entry);
    });
  }

  /** `deployment`: Azure's deployment path names the model, not the body */
  function handleChat(req: IncomingMessage, res: ServerResponse, path: string, deployment?: string): void {
    receive(req, res, path, (state, parsed, body, entry) => {
      if (deployment !== undefined && parsed && body && typeof body === "object") body.model ??= deployment;
      answerChat(req, res, state, parsed, body, entry);
    });
  }

  /**
   * POST /v1/responses (./mock-openai-responses.ts): validated as OpenAI does, then answered
   * whole or as its event sequence. Directives from the last user text (and the mock's own):
   * mock:status=CODE, mock:latency=MS, mock:tokens=N, mock:text=WORD, mock:cache, and
   * mock:drop-after=K (stream: the events up to the K-th text delta, then the connection cut).
   */
  function handleResponses(req: IncomingMessage, res: ServerResponse, path: string): void {
    receive(req, res, path, (state, parsed, body, entry) => {
      if (!parsed) {
        state.done = true;
        sendError(res, 400, INVALID_JSON_MESSAGE, "invalid_request_error", null, null);
        return;
      }
      if (!authorized(req, res)) {
        state.done = true;
        return;
      }
      const problem = responsesProblem(body);
      if (problem) {
        state.done = true;
        sendError(res, 400, ...problem);
        return;
      }
      const input = readInput(body);
      const fromHeader = req.headers["x-mock-directives"];
      const d = agent
        ? new Map<string, string>()
        : directiveMap(
            `${input.lastUser} ${tracker.ownDirectives()} ${typeof fromHeader === "string" ? fromHeader : ""}`,
          );
      const go = () => {
        state.timer = undefined;
        if (state.closed) return;
        state.done = true;
        const status = Number.parseInt(d.get("status") ?? "", 10);
        if (status >= 400 && status <= 599) return sendError(res, status, ...statusError(status, body.model));
        const plan = agent ? planAgentResponse(body, input) : planResponse(body, d, input);
        if (agent && entry !== undefined) entry.usage = plan.response.usage;
        if (body.stream !== true) return sendJson(res, 200, JSON.stringify(plan.response));
        res.writeHead(200, {
          "content-type": SSE_CONTENT_TYPE,
          "cache-control": "no-cache",
          "x-request-id": nextRequestId(),
          "openai-version": "2020-10-01",
        });
        const events = responseEvents(plan);
        const dropAfter = Number.parseInt(d.get("drop-after") ?? "", 10);
        if (!(dropAfter >= 0)) return void res.end(events.join(""));
        // the events up to the K-th text delta, then the connection cut
        let deltas = 0;
        const cut = events.findIndex(
          (e) => e.startsWith("event: response.output_text.delta\n") && ++deltas === dropAfter,
        );
        res.write(events.slice(0, cut === -1 ? events.length : cut + 1).join(""), () => req.socket.destroy());
      };
      const latency = Number.parseInt(d.get("latency") ?? "", 10);
      const wait = Number.isFinite(latency) ? latency : defaultLatency;
      if (wait > 0) state.timer = setTimeout(go, wait);
      else go();
    });
  }

  /** `deployment`: Azure's deployment path names the model, not the body */
  function handleEmbeddings(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    deployment?: string,
  ): void {
    receive(req, res, path, (state, parsed, body) => {
      if (!authorized(req, res)) {
        state.done = true;
        return;
      }
      if (deployment !== undefined && parsed && body && typeof body === "object") body.model ??= deployment;
      const problem = parsed
        ? embeddingsProblem(body)
        : ([INVALID_JSON_MESSAGE, "invalid_request_error", null, null] as ErrorSpec);
      if (problem) {
        state.done = true;
        sendError(res, 400, ...problem);
        return;
      }
      const inputs: Array<string | number[]> =
        typeof body.input === "string"
          ? [body.input]
          : typeof body.input[0] === "number"
            ? [body.input]
            : body.input;
      const texts = inputs.filter((i): i is string => typeof i === "string").join(" ");
      const fromHeader = req.headers["x-mock-directives"];
      const d = parseDirectives(
        `${texts} ${tracker.ownDirectives()} ${typeof fromHeader === "string" ? fromHeader : ""}`,
      );
      if (d.hang) return;
      const go = () => {
        state.timer = undefined;
        if (state.closed) return;
        state.done = true;
        if (d.status !== undefined) {
          const headers = d.retryAfter === undefined ? undefined : { "retry-after": d.retryAfter };
          return sendError(res, d.status, ...statusError(d.status, body.model), headers);
        }
        const counts = inputs.map((i) => (typeof i === "string" ? countWords(i) : i.length));
        const over = counts.find((n) => n > MAX_EMBEDDING_INPUT_TOKENS);
        if (over !== undefined)
          return sendError(
            res,
            400,
            `This model's maximum context length is ${MAX_EMBEDDING_INPUT_TOKENS} tokens, however you requested ${over} tokens (${over} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`,
            "invalid_request_error",
            null,
            null,
          );
        const dims = body.dimensions ?? MOCK_DIMENSIONS;
        const base64 = body.encoding_format === "base64";
        const data = inputs.map((input, index) => {
          const vector = mockVector(input, dims);
          return { object: "embedding", index, embedding: base64 ? float32Base64(vector) : vector };
        });
        const prompt = counts.reduce((a, b) => a + b, 0);
        sendJson(
          res,
          200,
          JSON.stringify({
            object: "list",
            data,
            model: body.model,
            ...(d.noUsage ? {} : { usage: { prompt_tokens: prompt, total_tokens: prompt } }),
          }),
        );
      };
      const latency = d.latency ?? defaultLatency;
      if (latency > 0) state.timer = setTimeout(go, latency);
      else go();
    });
  }

  /** Validates a chat request; answers 400/401 and returns false when it is not acceptable. */
  function acceptable(req: IncomingMessage, res: ServerResponse, parsed: boolean, body: any): boolean {
    if (!authorized(req, res)) return false;
    let err: [number, ...ErrorSpec] | undefined;
    if (!parsed) err = [400, INVALID_JSON_MESSAGE, "invalid_request_error", null, null];
    else if (body === null || typeof body !== "object" || Array.isArray(body)) {
      err = [400, "The request body must be a JSON object.", "invalid_request_error", null, null];
    } else if (typeof body.model !== "string" || body.model === "") {
      err = [400, "you must provide a model parameter", "invalid_request_error", null, null];
    } else if (body.messages === undefined) {
      err = [
        400,
        "Missing required parameter: 'messages'.",
        "invalid_request_error",
        "messages",
        "missing_required_parameter",
      ];
    } else if (!Array.isArray(body.messages)) {
      err = [
        400,
        "Invalid type for 'messages': expected an array of objects.",
        "invalid_request_error",
        "messages",
        "invalid_type",
      ];
    } else if (body.messages.length === 0) {
      err = [
        400,
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        "invalid_request_error",
        "messages",
        "empty_array",
      ];
    } else if (toolProblem(body)) {
      err = toolProblem(body);
    } else if (REASONING_MODEL.test(body.model) && body.max_tokens !== undefined) {
      err = [
        400,
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "invalid_request_error",
        "max_tokens",
        "unsupported_parameter",
      ];
    }
    if (err === undefined) return true;
    sendError(res, ...err);
    return false;
  }

  /** What OpenAI says of tools and tool calls of a shape it does not take; undefined when they are fine. */
  function toolProblem(body: any): [number, ...ErrorSpec] | undefined {
    const missing = (param: string): [number, ...ErrorSpec] => [
      400,
      `Missing required parameter: '${param}'.`,
      "invalid_request_error",
      param,
      "missing_required_parameter",
    ];
    if (body.tools !== undefined && !Array.isArray(body.tools))
      return [
        400,
        "Invalid type for 'tools': expected an array.",
        "invalid_request_error",
        "tools",
        "invalid_type",
      ];
    for (const [i, tool] of (body.tools ?? []).entries()) {
      if (tool?.type === "function") {
        if (typeof tool.function?.name !== "string") return missing(`tools[${i}].function.name`);
      } else if (tool?.type === "custom") {
        if (typeof tool.custom?.name !== "string") return missing(`tools[${i}].custom.name`);
      } else
        return [
          400,
          `Invalid value: '${tool?.type}'. Supported values are: 'function' and 'custom'.`,
          "invalid_request_error",
          `tools[${i}].type`,
          "invalid_value",
        ];
    }
    for (const [i, m] of body.messages.entries())
      for (const [j, call] of (m?.tool_calls ?? []).entries()) {
        const at = `messages[${i}].tool_calls[${j}]`;
        if (call?.type === "custom") {
          if (typeof call.custom?.name !== "string") return missing(`${at}.custom.name`);
          if (typeof call.custom?.input !== "string") return missing(`${at}.custom.input`);
        } else if (typeof call?.function?.name !== "string") return missing(`${at}.function.name`);
      }
    return undefined;
  }

  function answerChat(
    req: IncomingMessage,
    res: ServerResponse,
    state: Active,
    parsed: boolean,
    body: any,
    entry?: ReceivedRequest,
  ): void {
    if (!acceptable(req, res, parsed, body)) {
      state.done = true;
      return;
    }
    if (agent) {
      const plan = agentChatPlan(body);
      if (entry !== undefined && plan.usage && (body.stream !== true || plan.includeUsage))
        entry.usage = usageObject(plan.promptTokens, plan.completionPerChoice, plan.cached, 0);
      if (body.stream === true) streamAnswer(req, res, state, plan, parseDirectives(""));
      else {
        state.done = true;
        sendJson(res, 200, buildCompletionJson(plan));
      }
      return;
    }
    const messages = body.messages as unknown[];

    // Prompt tokens over all messages; directives from the last user message.
    let promptWords = 0;
    let lastUserText = "";
    let lastText = "";
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i] as { role?: unknown; content?: unknown } | null;
      if (m === null || typeof m !== "object") continue;
      const text = contentText(m.content);
      promptWords += countWords(text);
      if (m.role === "user" || (m.role === "tool" && i === messages.length - 1)) lastUserText = text;
      lastText = text;
    }
    const fromHeader = req.headers["x-mock-directives"];
    const extra = `${tracker.ownDirectives()} ${typeof fromHeader === "string" ? fromHeader : ""}`.trim();
    const d = parseDirectives(extra ? `${lastUserText} ${extra}` : lastUserText);

    if (d.hang) return; // never answer; the 'close' listener accounts for the client going away

    const stream = body.stream === true;
    const latency = d.latency ?? defaultLatency;
    const go = (): void => {
      state.timer = undefined;
      if (state.closed) return;
      if (d.status !== undefined) {
        state.done = true;
        const headers = d.retryAfter === undefined ? undefined : { "retry-after": d.retryAfter };
        sendError(res, d.status, ...statusError(d.status, body.model), headers);
        return;
      }
      if (azure && d.blocked) {
        state.done = true;
        sendJson(res, 400, AZURE_PROMPT_FILTERED);
        return;
      }
      if (d.contextOverflow) {
        state.done = true;
        sendError(
          res,
          400,
          "This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens. Please reduce the length of the messages.",
          "invalid_request_error",
          "messages",
          "context_length_exceeded",
        );
        return;
      }
      if (!stream && d.dropAfter !== undefined) {
        state.done = true;
        req.socket.destroy();
        return;
      }
      let verdict: string | undefined;
      if (typeof body.model === "string" && body.model.toLowerCase().includes("guard")) {
        verdict = judgeVerdict(lastText);
        if (verdict === undefined) {
          state.done = true;
          sendError(res, 500, ...statusError(500, body.model));
          return;
        }
      }
      const prompt = templateCount ? Math.ceil(JSON.stringify(messages).length / 4) + 3 : promptWords;
      const plan = makePlan(body, d, prompt, verdict);
      if (stream) streamAnswer(req, res, state, plan, d);
      else {
        state.done = true;
        sendJson(res, 200, buildCompletionJson(plan));
      }
    };
    if (latency > 0) state.timer = setTimeout(go, latency);
    else go();
  }

  /**
   * Agent mode's answer (./mock-agent.ts): once tool results follow the last assistant message,
   * text quoting them; else a call of the request's shell tool. Prompt tokens are the words of
   * the messages' texts; completion tokens the answer's words, or 8 and the words of the call's
   * arguments.
   */
  function agentChatPlan(body: any): Plan {
    const messages = body.messages as any[];
    const lastAssistant = messages.findLastIndex((m) => m?.role === "assistant");
    const results = messages.slice(lastAssistant + 1).filter((m) => m?.role === "tool");
    const declared = (body.tools ?? []).map((t: any) =>
      t?.type === "custom"
        ? { name: t.custom?.name, schema: undefined, description: t.custom?.description, freeform: true }
        : { name: t?.function?.name, schema: t?.function?.parameters, description: t?.function?.description },
    );
    const call = results.length ? undefined : agentCall(declared);
    const text = results.length
      ? agentAnswer(results.map((m) => resultText(m.content)).join("\n"))
      : call
        ? ""
        : agentNoShell(declared);
    const args = call ? ("text" in call ? call.text : JSON.stringify(call.input)) : "";
    const words = text ? text.split(" ") : [];
    let prompt = 0;
    for (const m of messages) prompt += countWords(contentText(m?.content));
    const seq = nextSeq();
    const so = body.stream_options;
    return {
      id: `chatcmpl-${ID_PREFIX}${counterB62(seq, 8)}`,
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      kind: call ? ("text" in call ? "custom" : "tool") : "text",
      n: 1,
      piecesJson: call
        ? halves(args).map((p) => JSON.stringify(p))
        : words.map((w, i) => JSON.stringify(i ? ` ${w}` : w)),
      text,
      finishReason: call ? "tool_calls" : "stop",
      toolName: call?.name ?? TOOL_NAME,
      toolArguments: args,
      completionPerChoice: call ? 8 + countWords(args) : words.length,
      promptTokens: Math.max(1, prompt),
      usage: true,
      includeUsage: so !== null && typeof so === "object" && so.include_usage === true,
      callIdBase: `${CALL_PREFIX}${counterB62(seq, 8)}`,
      cached: 0,
      azure,
      errorEvent: false,
      reasoning: 0,
    };
  }

  function makePlan(body: any, d: Directives, promptWords: number, verdict?: string): Plan {
    const bound = nonNegativeInt(body.max_completion_tokens) ?? nonNegativeInt(body.max_tokens);
    const nRaw = nonNegativeInt(body.n);
    const n = nRaw === undefined || nRaw < 1 ? 1 : Math.min(nRaw, MAX_CHOICES);
    const seq = nextSeq();
    const called =
      calledTool(body, d.call) ?? (d.call === undefined ? calledTool(body, forcedTool(body)) : undefined);
    const structured = structuredText(body);
    let kind: Kind = "text";
    let piecesJson: string[];
    let text = "";
    let finishReason: Plan["finishReason"];
    if (verdict !== undefined) {
      // one piece per line of the verdict
      piecesJson = verdict.split("\n").map((line, i) => JSON.stringify(i === 0 ? line : `\n${line}`));
      text = verdict;
      finishReason = "stop";
    } else if (d.tool) {
      kind = "tool";
      piecesJson = TOOL_ARGS_PIECES_JSON;
      finishReason = "tool_calls";
    } else if (called) {
      kind = called.type === "custom" ? "custom" : "tool";
      piecesJson = halves(called.arguments).map((p) => JSON.stringify(p));
      finishReason = "tool_calls";
    } else if (d.refusal) {
      kind = "refusal";
      piecesJson = REFUSAL_PIECES_JSON;
      finishReason = "stop";
    } else if (structured !== undefined) {
      text = structured;
      piecesJson = halves(structured).map((p) => JSON.stringify(p));
      finishReason = "stop";
    } else {
      let tokens = d.tokens ?? bound ?? DEFAULT_COMPLETION_TOKENS;
      if (bound !== undefined && tokens > bound) tokens = bound;
      piecesJson = textPiecesJson(tokens, d.text);
      text = replyText(tokens, d.text);
      finishReason = bound !== undefined && tokens === bound ? "length" : "stop";
    }
    if (d.filtered) finishReason = "content_filter";
    const usage = !d.noUsage;
    const so = body.stream_options;
    const includeUsage = usage && so !== null && typeof so === "object" && so.include_usage === true;
    return {
      id: `chatcmpl-${ID_PREFIX}${counterB62(seq, 8)}`,
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      kind,
      n,
      piecesJson,
      text,
      finishReason,
      toolName: called?.name ?? TOOL_NAME,
      toolArguments: called?.arguments ?? TOOL_ARGUMENTS,
      completionPerChoice: piecesJson.length,
      promptTokens: Math.max(1, promptWords),
      usage,
      includeUsage,
      callIdBase: `${CALL_PREFIX}${counterB62(seq, 8)}`,
      cached: d.cache ? Math.min(3, promptWords) : 0,
      azure,
      errorEvent: azure && d.errorEvent,
      reasoning: d.reasoning ? MOCK_REASONING_TOKENS : 0,
    };
  }

  function streamAnswer(
    req: IncomingMessage,
    res: ServerResponse,
    state: Active,
    plan: Plan,
    d: Directives,
  ): void {
    const { steps, contentSteps } = buildStreamSteps(plan);
    // Fault injection: how many steps to send (opening step + K content chunks) before stalling/dropping.
    let stopAfter = steps.length;
    let fault: "hang" | "drop" | undefined;
    if (d.dropAfter !== undefined) {
      fault = "drop";
      stopAfter = 1 + Math.min(d.dropAfter, contentSteps);
    } else if (d.hangAfter !== undefined) {
      fault = "hang";
      stopAfter = 1 + Math.min(d.hangAfter, contentSteps);
    }

    res.writeHead(200, {
      "content-type": SSE_CONTENT_TYPE,
      "cache-control": "no-cache",
      "x-request-id": nextRequestId(),
      "openai-version": "2020-10-01",
    });

    // Write the last step before the fault, then stall ("hang") or destroy the socket once it is flushed ("drop").
    const writeAndStop = (step: string): void => {
      if (fault === "drop") {
        state.done = true;
        res.write(step, () => req.socket.destroy());
      } else {
        res.write(step); // stall with the response open; the 'close' listener records the client abort
      }
    };

    if (chunkDelay === 0) {
      if (fault === undefined) {
        state.done = true;
        // The whole stream in one write: ~3x the throughput of one write per chunk (SSE framing is unaffected;
        // use chunkDelayMs to get separate TCP/HTTP chunks).
        res.end(steps.join(""));
        return;
      }
      for (let i = 0; i < stopAfter - 1; i++) res.write(steps[i]!);
      writeAndStop(steps[stopAfter - 1]!);
      return;
    }

    let i = 0;
    const next = (): void => {
      state.timer = undefined;
      if (state.closed) return;
      const step = steps[i]!;
      i++;
      if (i === steps.length) {
        state.done = true;
        res.end(step);
      } else if (i === stopAfter) {
        writeAndStop(step);
      } else {
        res.write(step);
        state.timer = setTimeout(next, chunkDelay);
      }
    };
    next();
  }

  const server = createServer({ keepAliveTimeout: 65_000, noDelay: true }, (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const method = req.method ?? "GET";
    if (azure) {
      const deployment = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(path);
      if (method === "POST" && deployment && /[?&]api-version=[^&]/.test(url))
        return (deployment[2] === "embeddings" ? handleEmbeddings : handleChat)(
          req,
          res,
          path,
          decodeURIComponent(deployment[1]!),
        );
      if (method === "POST" && path === "/openai/v1/chat/completions") return handleChat(req, res, path);
      if (method === "POST" && path === "/openai/v1/embeddings") return handleEmbeddings(req, res, path);
      return sendJson(res, 404, JSON.stringify({ error: { code: "404", message: "Resource not found" } }));
    }
    if (path === "/v1/chat/completions" && method === "POST") return handleChat(req, res, path);
    if (path === "/v1/responses" && method === "POST") return handleResponses(req, res, path);
    if (path === "/v1/embeddings" && method === "POST") return handleEmbeddings(req, res, path);
    if (method === "GET" && (path === "/v1/models" || path === "/v1/models/mock-model")) {
      if (!authorized(req, res)) return;
      return sendJson(
        res,
        200,
        path === "/v1/models"
          ? MODELS_BODY
          : JSON.stringify({ id: "mock-model", object: "model", created: 1700000000, owned_by: "mock" }),
      );
    }
    sendError(res, 404, `Invalid URL (${method} ${path})`, "invalid_request_error", null, null);
  });

  return listenForTests(server, port, host).then((url) => tracker.upstream(server, url, requests));
}

// ---------------------------------------------------------------------------
// CLI: node test/support/mock-openai-upstream.ts --port 9100 --latency 20 [--chunk-delay 0] [--no-record] [--azure]
//      [--prompt-count words|template]
// ---------------------------------------------------------------------------

if (isMain(import.meta.url)) void runMockCli("mock-openai-upstream", startMockUpstream);
