// An OpenAI chat request as an Anthropic Messages request (POST /v1/messages). Only fields
// the Messages API defines are sent: it refuses unknown ones.
import type { ChatRequest } from "../../domain/chat-request.ts";
import { GatewayError } from "../../errors/index.ts";
import { customToolsAsFunctions } from "../custom-tools.ts";
import { applyFieldRules, type FieldRules, mapped, refused, SHARED_RULES } from "../field-policy.ts";
import { denies, noteDropped, type PassthroughSettings, refusal } from "../passthrough.ts";
import { nativeBodyBound, type PromptOverheads, promptUpperBound } from "../prompt-bound.ts";
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

export const PROVIDER = "Anthropic";

/**
 * What Anthropic adds to the prompt when a request has tools: its tool-use system prompt,
 * 346 tokens for tool_choice auto or none and 313 for any or tool on current models (Claude
 * 4.x; "Tool use system prompt token count", platform.claude.com tool-use pricing). The
 * larger is held for every tools request.
 */
export const TOOL_PROMPT_TOKENS = 346;

/**
 * The prompt part of the reservation: the shared bound plus what Anthropic adds, and, for a
 * Messages API body sent as it is, the larger of that and the body's own bound: the body
 * carries what its canonical request does not (the thinking of earlier turns, documents,
 * server tools, fields newer than the gateway), all of it text the upstream may count.
 */
export function anthropicPromptBound(
  request: ChatRequest,
  overheads: PromptOverheads,
  native?: NativeRequest,
): number {
  const tools = request.tools?.length ? TOOL_PROMPT_TOKENS : 0;
  const bound = promptUpperBound(request, overheads) + tools;
  if (native?.api !== "messages") return bound;
  const nativeTools = Array.isArray(native.body.tools) && native.body.tools.length ? TOOL_PROMPT_TOKENS : 0;
  return Math.max(bound, nativeBodyBound(native.body, overheads) + nativeTools);
}

/** The body field each beta flag enables: without its flag, Anthropic refuses the field. */
const BETA_FIELDS: Readonly<Record<string, string>> = {
  context_management: "context-management-2025-06-27",
};

/**
 * A Messages API client's body, as it came, for this upstream: the call's model and output
 * bound (the reserved one; a thinking budget that no longer fits below it is cut, or left out
 * under the minimum), and the client's `anthropic-beta` flags but those the provider denies
 * (each dropped with a notice, or refused in strict mode). Thinking blocks, signatures, cache
 * markers and whatever the gateway does not know pass untouched.
 */
export function nativeMessagesBody(
  call: UpstreamCall,
  native: NativeRequest,
  stream: boolean,
  settings: PassthroughSettings,
): { body: Record<string, unknown>; betas: string | undefined } {
  const body: Record<string, unknown> = {
    ...native.body,
    model: call.upstreamModel,
    max_tokens: call.outputBound,
  };
  if (stream) body.stream = true;
  else delete body.stream;
  const thinking = body.thinking as { type: string; budget_tokens?: number } | undefined;
  if (thinking?.type === "enabled" && (thinking.budget_tokens ?? 0) >= call.outputBound) {
    if (call.outputBound - 1 >= MIN_THINKING_BUDGET)
      body.thinking = { ...thinking, budget_tokens: call.outputBound - 1 };
    else delete body.thinking;
  }
  const asked = (native.headers["anthropic-beta"] ?? "").split(",").map((b) => b.trim());
  const betas: string[] = [];
  for (const beta of new Set(asked)) {
    if (!beta) continue;
    if (!denies(settings.deny, beta)) betas.push(beta);
    else if (settings.strict)
      throw refusal(
        { param: "anthropic-beta", name: beta, capability: `beta_header:${beta}` },
        PROVIDER,
        "the gateway's operator does not pass it to this upstream",
      );
    else noteDropped(call, `anthropic-beta (${beta})`);
  }
  for (const [field, beta] of Object.entries(BETA_FIELDS))
    if (body[field] !== undefined && !betas.includes(beta)) {
      delete body[field];
      noteDropped(call, field);
    }
  return { body, betas: betas.length ? betas.join(",") : undefined };
}

/** Anthropic refuses a thinking budget under this ("budget_tokens" minimum, extended thinking docs). */
export const MIN_THINKING_BUDGET = 1024;

/** Whether reasoning_effort asks for thinking (none and absent do not). */
function thinks(request: ChatRequest): boolean {
  return request.reasoning_effort !== undefined && request.reasoning_effort !== "none";
}

const DURING_THINKING = "extended thinking (reasoning_effort) takes";

export const ANTHROPIC_RULES: FieldRules = {
  ...SHARED_RULES,
  temperature: {
    becomes: "`temperature` (Anthropic's range is 0 to 1: above 1 is refused; with thinking only 1)",
    refuse: (t: number, request) =>
      t > 1
        ? "its temperature goes from 0 to 1"
        : thinks(request) && t !== 1
          ? `${DURING_THINKING} no temperature but 1`
          : undefined,
  },
  top_p: {
    becomes: "`top_p` (with thinking, 0.95 to 1 only)",
    refuse: (p: number, request) =>
      thinks(request) && p < 0.95 ? `${DURING_THINKING} top_p from 0.95 to 1 only` : undefined,
  },
  max_tokens: mapped("superseded: `max_tokens` carries the output bound the gateway reserved"),
  max_completion_tokens: mapped("superseded: `max_tokens` carries the output bound the gateway reserved"),
  n: refused("it returns one choice per request", (n: number) => n === 1, "1: dropped; more: refused"),
  stop: mapped("`stop_sequences`"),
  seed: refused("it has no seed"),
  user: mapped("`metadata.user_id`"),
  tools: mapped(
    "`tools[]` as `{name, description, input_schema}` (function tools, and custom tools as functions of one string argument; `strict` is not enforced)",
  ),
  tool_choice: {
    becomes: "`tool_choice`: `auto` → auto, `none` → none, `required` → any, a named function → tool",
    refuse: (choice: unknown, request) =>
      thinks(request) && choice !== "auto" && choice !== "none"
        ? `${DURING_THINKING} tool_choice auto or none only`
        : undefined,
  },
  parallel_tool_calls: mapped(
    "`false` → `tool_choice.disable_parallel_tool_use`; `true` (the default) dropped",
  ),
  response_format: mapped(
    "`json_schema` → `output_config.format` (Anthropic's structured outputs); `json_object` → the same with an object schema; `text`: dropped",
  ),
  presence_penalty: refused("it has no presence penalty", (p: number) => p === 0, "0: dropped; else refused"),
  frequency_penalty: refused(
    "it has no frequency penalty",
    (p: number) => p === 0,
    "0: dropped; else refused",
  ),
  logprobs: refused(
    "it returns no log probabilities",
    (l: boolean) => !l,
    "`false`: dropped; `true`: refused",
  ),
  top_logprobs: refused(
    "it returns no log probabilities",
    (n: number) => n === 0,
    "0: dropped; else refused",
  ),
  reasoning_effort: {
    becomes:
      "`thinking: {type: enabled, budget_tokens}`: `none` → no thinking; `minimal` → 1024; `low`, `medium`, `high` → 25 %, 50 %, 80 % of the output bound, at least 1024 (a bound of 1024 or less is refused)",
    refuse: unknownEffort,
  },
  safety_identifier: mapped("`metadata.user_id` when `user` is absent"),
};

type Block = Record<string, unknown> & { type: string };
interface AnthropicMessage {
  role: "user" | "assistant";
  content: Block[];
}

function partBlock(part: Part): Block {
  if (part.kind === "text") return { type: "text", text: part.text };
  if (part.kind === "image")
    return { type: "image", source: { type: "base64", media_type: part.mediaType, data: part.data } };
  return { type: "image", source: { type: "url", url: part.url } };
}

/** The thinking budget for an effort within `bound`; undefined for none. */
export function thinkingBudget(effort: string, bound: number): number | undefined {
  if (effort === "none") return undefined;
  const share = EFFORT_SHARE[effort];
  return Math.max(MIN_THINKING_BUDGET, share === undefined ? 0 : Math.floor(bound * share));
}

/**
 * The Messages request body. Throws invalid_request, before anything is sent, for what
 * Anthropic cannot honour (unless the provider drops unsupported fields).
 */
export function messagesBody(call: UpstreamCall, stream: boolean, strict: boolean) {
  const request = customToolsAsFunctions(applyFieldRules(call, ANTHROPIC_RULES, PROVIDER, strict));
  const system: Block[] = [];
  const messages: AnthropicMessage[] = [];
  const push = (role: AnthropicMessage["role"], blocks: Block[]) => {
    if (!blocks.length) return; // Anthropic refuses empty turns; an empty message says nothing
    const last = messages.at(-1);
    // Consecutive turns of one role are one turn there.
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  request.messages.forEach((m, i) => {
    const param = `messages[${i}]`;
    switch (m.role) {
      case "system":
      case "developer": {
        const text = textOnly(m.content, `${param}.content`, PROVIDER);
        // Mid-conversation (Claude Code sends such turns): text the model sees at that place.
        if (text && messages.length) push("user", [{ type: "text", text: midConversationSystem(text) }]);
        else if (text) system.push({ type: "text", text });
        break;
      }
      case "user":
        push("user", readParts(m.content, `${param}.content`, PROVIDER).map(partBlock));
        break;
      case "assistant": {
        const blocks = readParts(m.content, `${param}.content`, PROVIDER).map(partBlock);
        (m.tool_calls ?? []).forEach((c, j) => {
          const fn = functionCall(c, `${param}.tool_calls[${j}]`, PROVIDER);
          blocks.push({
            type: "tool_use",
            id: fn.id,
            name: fn.name,
            input: toolArguments(fn.arguments, `${param}.tool_calls[${j}].function.arguments`),
          });
        });
        push("assistant", blocks);
        break;
      }
      case "tool": {
        const content = readParts(m.content, `${param}.content`, PROVIDER).map(partBlock);
        push("user", [{ type: "tool_result", tool_use_id: m.tool_call_id, content }]);
        break;
      }
      default:
        throw new GatewayError("invalid_request", {
          message: `Messages of role '${m.role}' are not supported by ${PROVIDER}: send tool messages.`,
          param: `${param}.role`,
        });
    }
  });
  // Tool results must open their user turn: a user message merged after them goes behind.
  for (const m of messages)
    if (m.role === "user")
      m.content.sort((a, b) => Number(b.type === "tool_result") - Number(a.type === "tool_result"));

  const body: Record<string, unknown> = {
    model: call.upstreamModel,
    max_tokens: call.outputBound,
    messages,
  };
  if (system.length) body.system = system;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.stop !== undefined)
    body.stop_sequences = typeof request.stop === "string" ? [request.stop] : request.stop;
  const userId = request.user ?? request.safety_identifier;
  if (userId !== undefined) body.metadata = { user_id: userId };
  const tools = functionTools(request, PROVIDER);
  if (tools.length)
    body.tools = tools.map((t) => ({
      name: t.name,
      ...(t.description === undefined ? {} : { description: t.description }),
      input_schema: t.parameters ?? { type: "object", properties: {} },
    }));
  const choice = toolChoice(request, PROVIDER);
  const single = request.parallel_tool_calls === false;
  if (choice || (single && tools.length)) {
    const mode = choice?.mode ?? "auto";
    const tc: Record<string, unknown> =
      mode === "named"
        ? { type: "tool", name: (choice as { name: string }).name }
        : { type: mode === "required" ? "any" : mode };
    if (single && mode !== "none") tc.disable_parallel_tool_use = true;
    body.tool_choice = tc;
  }
  const format = outputFormat(request.response_format);
  if (format) body.output_config = { format };
  const thinking = thinkingFor(call, request, messages, strict);
  if (thinking) body.thinking = thinking;
  if (stream) body.stream = true;
  return body;
}

function thinkingFor(
  call: UpstreamCall,
  request: ChatRequest,
  messages: AnthropicMessage[],
  strict: boolean,
) {
  const bound = call.outputBound;
  const effort = request.reasoning_effort;
  if (effort === undefined) return undefined;
  const budget = thinkingBudget(effort, bound);
  if (budget === undefined) return undefined;
  // A tool loop under way: Anthropic wants the previous turn's signed thinking block back,
  // which an OpenAI client never kept. The turn goes without thinking rather than failing.
  const lastAssistant = messages.findLast((m) => m.role === "assistant");
  if (lastAssistant?.content.some((b) => b.type === "tool_use")) return undefined;
  // budget_tokens must be below max_tokens and at least 1024: a smaller bound cannot think.
  if (budget >= bound) {
    if (!strict) {
      noteDropped(call, "reasoning_effort");
      return undefined;
    }
    throw new GatewayError("invalid_request", {
      message: `'reasoning_effort' needs an output bound above ${MIN_THINKING_BUDGET} tokens on ${PROVIDER}: its thinking budget is at least ${MIN_THINKING_BUDGET} and must stay below max_tokens. Raise max_tokens or leave reasoning_effort out.`,
      param: "reasoning_effort",
    });
  }
  return { type: "enabled", budget_tokens: budget };
}

/**
 * OpenAI's `response_format` as Anthropic's structured outputs (`output_config.format`): a
 * JSON schema as it is, JSON mode as a schema of any object. The answer is the JSON as text,
 * where chat completions has it.
 */
function outputFormat(format: ChatRequest["response_format"]): Record<string, unknown> | undefined {
  if (format?.type === "json_schema") {
    const schema = (format.json_schema as { schema?: unknown } | undefined)?.schema;
    return { type: "json_schema", schema: schema ?? { type: "object" } };
  }
  if (format?.type === "json_object") return { type: "json_schema", schema: { type: "object" } };
  return undefined;
}
