/**
 * Mock of Anthropic's Messages API, `POST /v1/messages` (JSON and SSE), for the gateway's
 * tests and the benchmark. It answers in Anthropic's shapes (the examples of the Messages and
 * streaming references, docs.claude.com/en/api/messages and /en/api/messages-streaming) and
 * validates requests as the real API does: an unknown field, a `system` role opening `messages`
 * (or a system message of anything but text; later ones are the mid-conversation system turns
 * Claude Code sends), a missing `max_tokens`, a block of an unknown type, a tool result that
 * answers no tool use, a thinking budget out of range, a `cache_control` that is not
 * `{type: ephemeral, ttl?}` or more than 4 of them, a thinking block whose signature this mock
 * did not issue (or redacted thinking whose data it did not), an assistant turn of a tool loop
 * under thinking that does not start with its thinking block, an `anthropic-beta` flag it does
 * not know, or a beta field (`context_management`, a tool's `defer_loading`) without its flag:
 * all are 400 `invalid_request_error`. What Claude Code sends the real API (its betas,
 * `output_config`) is known here, so its requests pass unchanged (test/agents/). A wrong
 * `x-api-key` (none of `apiKey`'s) is 401 `authentication_error`; a key of `rateLimitedKeys` is
 * 429 `rate_limit_error` with `retry-after`; a missing `anthropic-version` is 400.
 *
 * Thinking: with `thinking` enabled (or adaptive), or the directive, the answer starts with a
 * thinking block signed by this mock (the signature is an HMAC of the thinking text: any byte
 * changed on the way back is refused). Prompt caching as the real API counts it: the prefix
 * up to each `cache_control` breakpoint (tools, then system, then messages) is cached per mock;
 * the longest prefix cached before, at a breakpoint or up to 20 blocks before one, is read
 * (`cache_read_input_tokens`), the rest up to the last breakpoint written
 * (`cache_creation_input_tokens`), and `input_tokens` is what remains.
 *
 * Directives in the text of the last user turn (`mock:` …), as in mock-openai-upstream.ts:
 *   tokens=N         answer N words (one output token each), capped by max_tokens (then max_tokens)
 *   tool             one get_weather call; tools=2: get_weather and get_time, in parallel
 *   call=NAME        one call of the request's tool NAME, its input filled from the tool's schema
 *                    (mockArguments); text as usual when the request has no such tool
 *   stop-sequence    stop_reason stop_sequence;  refusal: stop_reason refusal
 *   cache            usage with cache writes (7) and cache reads (11) besides input_tokens
 *   split-usage      the stream sends two message_delta events (running totals, as with server tools)
 *   thinking         a thinking block before the text;  redacted: a redacted_thinking block before it
 *   status=CODE      answer HTTP CODE with Anthropic's error body for it (529 overloaded_error, …)
 *   spend-limit      429 whose error says the spend limit is reached
 *   error-event      stream: an overloaded `error` event right after message_start
 *   error-after=K    stream: an `error` event after K text deltas
 *   hang, drop-after=K, latency=MS
 * Without a directive that decides the answer, the request's own settings do, as Claude
 * follows them: a `tool_choice` that forces a call (`any`: the first tool; `{type: tool,
 * name}`: that one) calls it, its input filled as for call=NAME; `output_config.format` of
 * type `json_schema` makes the text a JSON document of that schema (mockArguments: output
 * tokens 2, in two text deltas when streamed).
 * Input tokens are the words of the system prompt and all messages (at least 1).
 *
 * Agent mode (`agent: true`, ./mock-agent.ts): directives are not read; a turn whose last user
 * message carries tool results is answered with text quoting them, any other with a call of the
 * request's shell tool (output tokens: the text's words, or 8 and the words of the call's input).
 * The usage of each answer is noted on its recorded request (`usage`).
 *
 * Run as a process (for the benchmark): node test/support/mock-anthropic-upstream.ts --port 0 --latency 20
 */
import { createHash, createHmac } from "node:crypto";
import { agentAnswer, agentCall, agentNoShell, resultText } from "./mock-agent.ts";
import type { MockUpstream, MockUpstreamOptions } from "./mock-openai-upstream.ts";
import {
  countOf,
  countWords,
  directives,
  isMain,
  keySet,
  type MockRequest,
  mockArguments,
  mockId,
  type Reply,
  replyWords,
  runMockCli,
  sseEvent,
  startMockProvider,
} from "./mock-provider.ts";

const TOP_FIELDS = new Set([
  "model",
  "messages",
  "max_tokens",
  "system",
  "temperature",
  "top_p",
  "top_k",
  "stop_sequences",
  "stream",
  "metadata",
  "tools",
  "tool_choice",
  "thinking",
  "service_tier",
  "context_management",
  "output_config",
]);
/** Body fields that exist only under a beta flag. */
const BETA_FIELDS: Record<string, string> = { context_management: "context-management-2025-06-27" };
/** Tool fields that exist only under a beta flag (tool search's deferred tools). */
const TOOL_BETA_FIELDS: Record<string, string> = { defer_loading: "advanced-tool-use-2025-11-20" };
/** The beta flags this mock knows; any other is refused, as Anthropic refuses unknown flags. */
export const MOCK_BETAS = new Set([
  "claude-code-20250219",
  "interleaved-thinking-2025-05-14",
  "fine-grained-tool-streaming-2025-05-14",
  "token-efficient-tools-2025-02-19",
  "prompt-caching-2024-07-31",
  "context-management-2025-06-27",
  "output-128k-2025-02-19",
  "context-1m-2025-08-07",
  // what Claude Code 2.1.332 asks Anthropic's API for (test/fixtures/agents/)
  "per-turn-control-2026-07-01",
  "mid-conversation-tool-changes-2026-07-01",
  "thinking-token-count-2026-05-13",
  "advanced-tool-use-2025-11-20",
  "effort-2025-11-24",
  "thinking-display-updates-2026-08-18",
]);
const BLOCK_FIELDS: Record<string, Set<string>> = {
  text: new Set(["type", "text", "cache_control", "citations"]),
  image: new Set(["type", "source", "cache_control"]),
  tool_use: new Set(["type", "id", "name", "input", "cache_control"]),
  tool_result: new Set(["type", "tool_use_id", "content", "is_error", "cache_control"]),
  thinking: new Set(["type", "thinking", "signature"]),
  redacted_thinking: new Set(["type", "data"]),
};
const SIGNING_KEY = "mock-anthropic-thinking-key";
/** The signature of a thinking text, as this mock issues it. */
export function thinkingSignature(thinking: string): string {
  return createHmac("sha256", SIGNING_KEY).update(thinking).digest("base64");
}
/** Redacted thinking this mock issues: opaque, and checked on the way back like a signature. */
const REDACTED_DATA = `EmwKAhgB${createHmac("sha256", SIGNING_KEY).update("redacted").digest("base64")}`;
const MAX_CACHE_BREAKPOINTS = 4;
const IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);
const ERROR_TYPES: Record<number, [string, string]> = {
  400: ["invalid_request_error", "The mock was asked to refuse this request."],
  401: ["authentication_error", "invalid x-api-key"],
  403: ["permission_error", "Your API key does not have permission to use the specified resource."],
  404: ["not_found_error", "The requested resource could not be found."],
  429: ["rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."],
  500: ["api_error", "An unexpected error has occurred internal to Anthropic's systems."],
  529: ["overloaded_error", "Overloaded"],
};

export const MOCK_CACHE_WRITE = 7;
export const MOCK_CACHE_READ = 11;

class Invalid extends Error {}

const invalid = (message: string): never => {
  throw new Invalid(message);
};

function errorBody(type: string, message: string, details?: Record<string, unknown>) {
  return {
    type: "error",
    error: { type, message, ...(details ? { details } : {}) },
    request_id: mockId("req_"),
  };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) => (b?.type === "text" ? b.text : b?.type === "tool_result" ? textOf(b.content) : ""))
    .join(" ");
}

function checkCacheControl(value: any, at: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== "object" || value.type !== "ephemeral")
    invalid(`${at}.cache_control.type: Input should be 'ephemeral'`);
  for (const key of Object.keys(value))
    if (key !== "type" && key !== "ttl")
      invalid(`${at}.cache_control.${key}: Extra inputs are not permitted`);
  if (value.ttl !== undefined && value.ttl !== "5m" && value.ttl !== "1h")
    invalid(`${at}.cache_control.ttl: Input should be '5m' or '1h'`);
}

/** The beta flags of a request; an unknown one is refused. */
function betasOf(header: string | string[] | undefined): Set<string> {
  const flags = new Set(
    (Array.isArray(header) ? header.join(",") : (header ?? ""))
      .split(",")
      .map((b) => b.trim())
      .filter(Boolean),
  );
  const unknown = [...flags].filter((b) => !MOCK_BETAS.has(b));
  if (unknown.length)
    invalid(
      `Unexpected value(s) \`${unknown.join(", ")}\` for the \`anthropic-beta\` header. Please consult our documentation at docs.claude.com or try again without the header.`,
    );
  return flags;
}

/**
 * The prompt's words and its prefixes, in the order the cache reads a request: tools, system,
 * messages. A prefix is known by a hash of what it holds (markers left out), as the real cache
 * matches exact prefixes; every block boundary is a prefix, and those with `cache_control` are
 * the breakpoints the cache writes.
 */
class PromptWalk {
  words = 0;
  readonly #hash = createHash("sha256");
  /** the prefix at the end of each block */
  readonly boundaries: { hash: string; words: number }[] = [];
  /** the indexes in `boundaries` of the blocks with cache_control */
  readonly breakpoints: number[] = [];

  add(part: unknown, words: number, cacheControl: unknown): void {
    const { cache_control: _marker, ...rest } = (part ?? {}) as Record<string, unknown>;
    this.#hash.update(JSON.stringify(rest));
    this.words += words;
    this.boundaries.push({ hash: this.#hash.copy().digest("base64"), words: this.words });
    if (cacheControl) this.breakpoints.push(this.boundaries.length - 1);
  }
}

/** Checks a request as the Messages API does; returns the words read and the last user text. */
function validate(
  body: any,
  betas: Set<string>,
): { promptWords: number; lastUser: string; walk: PromptWalk } {
  if (body === null || typeof body !== "object" || Array.isArray(body)) invalid("Invalid JSON body.");
  for (const key of Object.keys(body))
    if (!TOP_FIELDS.has(key) || (BETA_FIELDS[key] && !betas.has(BETA_FIELDS[key])))
      invalid(`${key}: Extra inputs are not permitted`);
  if (body.top_k !== undefined && !(Number.isInteger(body.top_k) && body.top_k >= 0))
    invalid("top_k: Input should be a valid integer greater than or equal to 0");
  if (typeof body.model !== "string") invalid("model: Field required");
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) invalid("max_tokens: Field required");
  if (body.temperature !== undefined && !(body.temperature >= 0 && body.temperature <= 1))
    invalid("temperature: Input should be less than or equal to 1");
  if (body.metadata !== undefined)
    for (const key of Object.keys(body.metadata))
      if (key !== "user_id") invalid(`metadata.${key}: Extra inputs are not permitted`);
  if (body.stop_sequences !== undefined && !Array.isArray(body.stop_sequences))
    invalid("stop_sequences: Input should be a valid list");
  const walk = new PromptWalk();
  if (!Array.isArray(body.messages) || !body.messages.length) invalid("messages: Field required");
  const tools = new Set<string>();
  for (const [i, t] of (body.tools ?? []).entries()) {
    for (const key of Object.keys(t)) {
      // eager_input_streaming: fine-grained tool streaming, generally available (no beta flag)
      const known = [
        "type",
        "name",
        "description",
        "input_schema",
        "cache_control",
        "strict",
        "eager_input_streaming",
      ].includes(key);
      const beta = TOOL_BETA_FIELDS[key];
      if (!(known || (beta && betas.has(beta)))) invalid(`tools.${i}.${key}: Extra inputs are not permitted`);
    }
    if (t.type !== undefined && t.type !== null && t.type !== "custom")
      invalid(`tools.${i}.type: Input tag '${t.type}' does not match the expected tag 'custom'`);
    if (typeof t.name !== "string" || t.input_schema?.type !== "object")
      invalid(`tools.${i}: name and an input_schema of type object are required`);
    checkCacheControl(t.cache_control, `tools.${i}`);
    tools.add(t.name);
    const { cache_control: _marker, ...counted } = t;
    walk.add(t, countWords(JSON.stringify(counted)), t.cache_control);
  }
  if (body.system !== undefined) {
    if (typeof body.system === "string") walk.add({ text: body.system }, countWords(body.system), undefined);
    else if (Array.isArray(body.system))
      for (const [i, b] of body.system.entries()) {
        if (b?.type !== "text" || typeof b.text !== "string" || !b.text)
          invalid(`system.${i}: system blocks must be non-empty text blocks`);
        for (const key of Object.keys(b))
          if (!BLOCK_FIELDS.text!.has(key)) invalid(`system.${i}.${key}: Extra inputs are not permitted`);
        checkCacheControl(b.cache_control, `system.${i}`);
        walk.add(b, countWords(b.text), b.cache_control);
      }
    else invalid("system: Input should be a valid string or list");
  }
  const choice = body.tool_choice;
  if (choice !== undefined) {
    if (!["auto", "any", "tool", "none"].includes(choice.type))
      invalid("tool_choice.type: Input tag does not match");
    if (choice.type === "tool" && !tools.has(choice.name)) invalid("tool_choice.name: no tool of that name");
  }
  const thinks = body.thinking?.type === "enabled" || body.thinking?.type === "adaptive";
  if (body.thinking !== undefined && body.thinking.type !== "disabled" && body.thinking.type !== "adaptive") {
    const budget = body.thinking.budget_tokens;
    if (body.thinking.type !== "enabled" || !Number.isInteger(budget) || budget < 1024)
      invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
    if (budget >= body.max_tokens) invalid("`max_tokens` must be greater than `thinking.budget_tokens`.");
  }
  if (thinks && body.temperature !== undefined && body.temperature !== 1)
    invalid("`temperature` may only be set to 1 when thinking is enabled.");
  let pendingToolUses: string[] = [];
  let lastUser = "";
  body.messages.forEach((m: any, i: number) => {
    // mid-conversation system turns (Claude Code sends its environment and reminders as such);
    // they carry text only and count as prompt like the system prompt
    if (m?.role === "system" && i > 0) {
      const texts = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
      if (!Array.isArray(texts) || !texts.length || texts.some((b: any) => b?.type !== "text" || !b.text))
        invalid(`messages.${i}: a system message carries non-empty text blocks only`);
      for (const b of texts) walk.add(b, countWords(b.text), b.cache_control);
      return;
    }
    if (m?.role !== "user" && m?.role !== "assistant")
      invalid(`messages.${i}.role: Input should be 'user', 'assistant' or (after the first) 'system'`);
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(blocks) || !blocks.length)
      invalid(`messages.${i}: all messages must have non-empty content`);
    const results: string[] = [];
    const at = (j: number) => `messages.${i}.content.${j}`;
    blocks.forEach((b: any, j: number) => {
      const allowed = BLOCK_FIELDS[b?.type];
      if (!allowed)
        invalid(`messages.${i}.content.${j}.type: Input tag '${b?.type}' does not match any expected tag`);
      for (const key of Object.keys(b))
        if (!allowed!.has(key))
          invalid(`messages.${i}.content.${j}.${b.type}.${key}: Extra inputs are not permitted`);
      if (b.type === "text" && !b.text)
        invalid(`messages.${i}.content.${j}: text content blocks must be non-empty`);
      checkCacheControl(b.cache_control, at(j));
      if (b.type === "thinking" || b.type === "redacted_thinking") {
        if (m.role !== "assistant") invalid(`${at(j)}: thinking blocks belong to assistant turns`);
        if (
          b.type === "thinking" &&
          (typeof b.thinking !== "string" || b.signature !== thinkingSignature(b.thinking))
        )
          invalid(`${at(j)}: Invalid \`signature\` in \`thinking\` block`);
        if (b.type === "redacted_thinking" && b.data !== REDACTED_DATA)
          invalid(`${at(j)}: Invalid \`data\` in \`redacted_thinking\` block`);
      }
      if (b.type === "tool_result" && Array.isArray(b.content))
        for (const [k, c] of b.content.entries()) {
          if (c?.type !== "text" && c?.type !== "image")
            invalid(`${at(j)}.tool_result.content.${k}.type: Input tag '${c?.type}' does not match`);
          checkCacheControl(c.cache_control, `${at(j)}.tool_result.content.${k}`);
        }
      if (b.type === "image") {
        const s = b.source;
        const ok =
          (s?.type === "base64" && IMAGE_TYPES.has(s.media_type) && typeof s.data === "string") ||
          (s?.type === "url" && /^https?:\/\//.test(s.url));
        if (!ok) invalid(`messages.${i}.content.${j}.image.source: invalid image source`);
      }
      if (b.type === "tool_use") {
        if (m.role !== "assistant")
          invalid(`messages.${i}.content.${j}: tool_use blocks belong to assistant turns`);
        if (typeof b.input !== "object" || b.input === null || Array.isArray(b.input))
          invalid(`messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`);
      }
      if (b.type === "tool_result") {
        if (j !== results.length) invalid(`messages.${i}: tool_result blocks must come first in a user turn`);
        if (!pendingToolUses.includes(b.tool_use_id))
          invalid(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        results.push(b.tool_use_id);
      }
    });
    if (pendingToolUses.length && pendingToolUses.some((id) => !results.includes(id)))
      invalid(
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${pendingToolUses.join(", ")}`,
      );
    // Under thinking, the assistant turn a tool loop continues must open with its thinking
    // block, signed: the reason clients must send those blocks back unchanged.
    if (thinks && results.length && i > 0) {
      const before = body.messages[i - 1];
      const first = Array.isArray(before?.content) ? before.content[0]?.type : "text";
      if (i === body.messages.length - 1 && first !== "thinking" && first !== "redacted_thinking")
        invalid(
          `messages.${i - 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`,
        );
    }
    pendingToolUses =
      m.role === "assistant" ? blocks.filter((b: any) => b.type === "tool_use").map((b: any) => b.id) : [];
    for (const b of blocks) walk.add(b, countWords(textOf([b])), b.cache_control);
    if (m.role === "user") lastUser = textOf(blocks);
  });
  if (walk.breakpoints.length > MAX_CACHE_BREAKPOINTS)
    invalid(
      `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${walk.breakpoints.length}.`,
    );
  return { promptWords: Math.max(1, walk.words), lastUser, walk };
}

interface Plan {
  id: string;
  model: string;
  words: string[];
  tools: { id: string; name: string; input: Record<string, unknown> }[];
  thinking: boolean;
  redacted: boolean;
  stopReason: string;
  usage: Record<string, number>;
  d: Map<string, string>;
}

/** The thinking text of every answer that thinks. */
const THINKING = "Let me think.";

/** How far back from a breakpoint the cache looks for an earlier prefix it holds (Anthropic: 20 blocks). */
const CACHE_LOOKBACK = 20;

/**
 * Cache figures as the real API counts them: at each breakpoint, the longest prefix cached
 * before within the lookback is read; the prefix up to the last breakpoint is written when it
 * was not; input_tokens is the rest.
 */
function cacheUsage(walk: PromptWalk, cache: Set<string>) {
  const last = walk.breakpoints.at(-1);
  if (last === undefined) return { input: Math.max(1, walk.words), read: 0, write: 0 };
  let read = 0;
  for (const b of walk.breakpoints)
    for (let i = b; i >= Math.max(0, b - CACHE_LOOKBACK); i--)
      if (cache.has(walk.boundaries[i]!.hash)) {
        read = Math.max(read, walk.boundaries[i]!.words);
        break;
      }
  const write = walk.boundaries[last]!.words - read;
  for (const b of walk.breakpoints) cache.add(walk.boundaries[b]!.hash);
  return { input: Math.max(1, walk.words - read - write), read, write };
}

function plan(
  body: any,
  checked: ReturnType<typeof validate>,
  d: Map<string, string>,
  cache: Set<string>,
): Plan {
  const bound = body.max_tokens as number;
  const tools: Plan["tools"] = [];
  if (d.has("tool") || d.has("tools")) {
    tools.push({ id: mockId("toolu_"), name: "get_weather", input: { city: "Paris" } });
    if (countOf(d, "tools") === 2)
      tools.push({ id: mockId("toolu_"), name: "get_time", input: { timezone: "CET" } });
  }
  // the tool the directive names, else the one tool_choice forces
  const choice = body.tool_choice;
  const forced =
    choice?.type === "tool" ? choice.name : choice?.type === "any" ? body.tools?.[0]?.name : undefined;
  const wanted = d.has("call") ? d.get("call") : tools.length ? undefined : forced;
  const called = (body.tools ?? []).find((t: { name?: unknown }) => t.name === wanted);
  if (called)
    tools.push({ id: mockId("toolu_"), name: called.name, input: mockArguments(called.input_schema) });
  // structured output: the text is a JSON document of the schema, in two pieces
  const json =
    body.output_config?.format?.type === "json_schema"
      ? JSON.stringify(mockArguments(body.output_config.format.schema))
      : undefined;
  const pieces =
    json === undefined
      ? undefined
      : [json.slice(0, Math.ceil(json.length / 2)), json.slice(Math.ceil(json.length / 2))];
  let n = tools.length ? 0 : (pieces?.length ?? countOf(d, "tokens") ?? 10);
  let stopReason = tools.length ? "tool_use" : "end_turn";
  if (d.has("stop-sequence")) stopReason = "stop_sequence";
  if (d.has("refusal")) stopReason = "refusal";
  if (n >= bound) {
    n = bound;
    stopReason = "max_tokens";
  }
  const thinking =
    d.has("thinking") || body.thinking?.type === "enabled" || body.thinking?.type === "adaptive";
  const output = n + tools.length * 8 + (thinking ? 5 : 0);
  const fixed = d.has("cache");
  const cached = cacheUsage(checked.walk, cache);
  return {
    id: mockId("msg_"),
    model: body.model,
    words: pieces && n === pieces.length ? pieces : replyWords(n),
    tools,
    thinking,
    redacted: d.has("redacted"),
    stopReason,
    usage: {
      input_tokens: fixed ? checked.promptWords : cached.input,
      cache_creation_input_tokens: fixed ? MOCK_CACHE_WRITE : cached.write,
      cache_read_input_tokens: fixed ? MOCK_CACHE_READ : cached.read,
      output_tokens: output,
    },
    d,
  };
}

function message(p: Plan) {
  const content: unknown[] = [];
  if (p.redacted) content.push({ type: "redacted_thinking", data: REDACTED_DATA });
  if (p.thinking)
    content.push({ type: "thinking", thinking: THINKING, signature: thinkingSignature(THINKING) });
  if (p.words.length) content.push({ type: "text", text: p.words.join("") });
  for (const t of p.tools) content.push({ type: "tool_use", id: t.id, name: t.name, input: t.input });
  return {
    id: p.id,
    type: "message",
    role: "assistant",
    content,
    model: p.model,
    stop_reason: p.stopReason,
    stop_sequence: p.stopReason === "stop_sequence" ? "###" : null,
    usage: p.usage,
  };
}

/** The stream as its events; `textAt` is the index of the first text delta. */
function events(p: Plan): { events: string[]; textAt: number } {
  const out: string[] = [];
  const ev = (data: { type: string; [field: string]: unknown }) => out.push(sseEvent(data, data.type));
  ev({
    type: "message_start",
    message: {
      ...message(p),
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...p.usage, output_tokens: 1 },
    },
  });
  let index = 0;
  if (p.redacted) {
    ev({
      type: "content_block_start",
      index,
      content_block: { type: "redacted_thinking", data: REDACTED_DATA },
    });
    ev({ type: "content_block_stop", index: index++ });
  }
  if (p.thinking) {
    ev({
      type: "content_block_start",
      index,
      content_block: { type: "thinking", thinking: "", signature: "" },
    });
    // the thinking in two deltas, as it streams: only the whole is signed
    const cut = Math.ceil(THINKING.length / 2);
    for (const thinking of [THINKING.slice(0, cut), THINKING.slice(cut)])
      ev({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking } });
    ev({
      type: "content_block_delta",
      index,
      delta: { type: "signature_delta", signature: thinkingSignature(THINKING) },
    });
    ev({ type: "content_block_stop", index: index++ });
  }
  let textAt = out.length;
  if (p.words.length) {
    ev({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
    out.push(sseEvent({ type: "ping" }, "ping"));
    textAt = out.length;
    for (const w of p.words)
      ev({ type: "content_block_delta", index, delta: { type: "text_delta", text: w } });
    ev({ type: "content_block_stop", index: index++ });
  }
  for (const t of p.tools) {
    ev({
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: t.id, name: t.name, input: {} },
    });
    const json = JSON.stringify(t.input);
    const cut = Math.ceil(json.length / 2);
    for (const partial_json of ["", json.slice(0, cut), json.slice(cut)])
      ev({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } });
    ev({ type: "content_block_stop", index: index++ });
  }
  const stop = { stop_reason: p.stopReason, stop_sequence: p.stopReason === "stop_sequence" ? "###" : null };
  if (p.d.has("split-usage")) {
    // running totals: the first is a part of the second, never to be added to it
    ev({
      type: "message_delta",
      delta: { stop_reason: null, stop_sequence: null },
      usage: { output_tokens: Math.floor(p.usage.output_tokens! / 2) },
    });
    ev({ type: "message_delta", delta: stop, usage: p.usage });
  } else ev({ type: "message_delta", delta: stop, usage: { output_tokens: p.usage.output_tokens } });
  ev({ type: "message_stop" });
  return { events: out, textAt };
}

/** Agent mode's answer (./mock-agent.ts): a call of the shell tool, or the text after its result. */
function agentPlan(body: any, checked: ReturnType<typeof validate>, cache: Set<string>): Plan {
  const lastUser = [...body.messages].reverse().find((m: any) => m.role === "user");
  const results = Array.isArray(lastUser?.content)
    ? lastUser.content.filter((b: any) => b?.type === "tool_result")
    : [];
  const declared = (body.tools ?? []).map((t: any) => ({
    name: t.name,
    schema: t.input_schema,
    description: t.description,
  }));
  const found = results.length ? undefined : agentCall(declared);
  // Messages has no free-form tools: their calls take the one string as arguments
  const call = found && ("text" in found ? { name: found.name, input: { input: found.text } } : found);
  const text = results.length
    ? agentAnswer(results.map((r: any) => resultText(r.content)).join("\n"))
    : call
      ? ""
      : agentNoShell(declared);
  const words = text ? text.split(" ").map((w, i) => (i ? ` ${w}` : w)) : [];
  const tools = call ? [{ id: mockId("toolu_"), ...call }] : [];
  const thinking = body.thinking?.type === "enabled" || body.thinking?.type === "adaptive";
  const cached = cacheUsage(checked.walk, cache);
  return {
    id: mockId("msg_"),
    model: body.model,
    words,
    tools,
    thinking,
    redacted: false,
    stopReason: call ? "tool_use" : "end_turn",
    usage: {
      input_tokens: cached.input,
      cache_creation_input_tokens: cached.write,
      cache_read_input_tokens: cached.read,
      output_tokens:
        words.length +
        tools.reduce((n, t) => n + 8 + countWords(JSON.stringify(t.input)), 0) +
        (thinking ? 5 : 0),
    },
    d: new Map(),
  };
}

/** The keys it accepts (undefined: any), and those whose rate limit is reached now. */
interface Keys {
  valid: ReadonlySet<string> | undefined;
  rateLimited: ReadonlySet<string> | undefined;
}

function answer(request: MockRequest, reply: Reply, keys: Keys, cache: Set<string>, agent: boolean) {
  if (request.method !== "POST" || request.path !== "/v1/messages")
    return reply.json(404, errorBody("not_found_error", "Not found"));
  const key = request.headers["x-api-key"];
  if (keys.valid !== undefined && !(typeof key === "string" && keys.valid.has(key)))
    return reply.json(401, errorBody("authentication_error", "invalid x-api-key"));
  if (typeof key === "string" && keys.rateLimited?.has(key))
    return reply.json(429, errorBody(...ERROR_TYPES[429]!), { "retry-after": "3" });
  if (!request.headers["anthropic-version"])
    return reply.json(400, errorBody("invalid_request_error", "anthropic-version: header is required"));
  let checked: ReturnType<typeof validate>;
  try {
    checked = validate(request.body, betasOf(request.headers["anthropic-beta"]));
  } catch (err) {
    if (err instanceof Invalid) return reply.json(400, errorBody("invalid_request_error", err.message));
    throw err;
  }
  if (agent) {
    const p = agentPlan(request.body, checked, cache);
    if (request.received) request.received.usage = p.usage;
    if (request.body.stream !== true) return reply.json(200, message(p), { "request-id": mockId("req_") });
    return reply.sse(events(p).events);
  }
  const d = directives(checked.lastUser);
  if (d.has("hang")) return reply.hang();
  if (d.has("spend-limit"))
    return reply.json(
      429,
      errorBody("rate_limit_error", "You have reached your specified API usage limits.", {
        error_code: "enforced_spend_limit_reached",
      }),
    );
  const status = countOf(d, "status");
  if (status !== undefined && status >= 400) {
    const [type, text] = ERROR_TYPES[status] ?? ["api_error", `status ${status}`];
    return reply.json(status, errorBody(type, text), status === 429 ? { "retry-after": "3" } : {});
  }
  const p = plan(request.body, checked, d, cache);
  if (request.body.stream !== true) {
    if (d.has("drop-after")) return reply.drop();
    return reply.json(200, message(p), { "request-id": mockId("req_") });
  }
  const { events: all, textAt } = events(p);
  const errorEvent = (type: string, text: string) =>
    sseEvent({ type: "error", error: { type, message: text } }, "error");
  if (d.has("error-event")) return reply.sse([all[0]!, errorEvent("overloaded_error", "Overloaded")]);
  const errorAfter = countOf(d, "error-after");
  if (errorAfter !== undefined)
    return reply.sse([
      ...all.slice(0, textAt + errorAfter),
      errorEvent("api_error", "Internal server error"),
    ]);
  const dropAfter = countOf(d, "drop-after");
  if (dropAfter !== undefined) return reply.sse(all, { stopAfter: textAt + dropAfter, kind: "drop" });
  reply.sse(all);
}

export function startMockAnthropic(
  options: MockUpstreamOptions & { record?: boolean } = {},
): Promise<MockUpstream> {
  /** the prompt prefixes cached so far (hashes of what they hold), for this mock's lifetime */
  const cache = new Set<string>();
  const keys = { valid: keySet(options.apiKey), rateLimited: options.rateLimitedKeys };
  return startMockProvider(
    (request, reply) => answer(request, reply, keys, cache, options.agent === true),
    options,
  );
}

if (isMain(import.meta.url)) void runMockCli("mock-anthropic-upstream", startMockAnthropic);
