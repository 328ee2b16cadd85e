/**
 * OpenAI's Responses API (`POST /v1/responses`) as the OpenAI mock speaks it
 * (./mock-openai-upstream.ts serves it): requests validated as strictly as OpenAI validates
 * them, and the answer as a Response object or its SSE event sequence.
 *
 * Validation, as OpenAI answers (400, its error envelope):
 *   - an unknown top-level field: `Unknown parameter: 'x'.` (code unknown_parameter)
 *   - `model` and `input` required; `max_output_tokens` at least 16
 *   - `previous_response_id`: the mock stores nothing, so any id is `previous_response_not_found`
 *     (a gateway must expand conversations itself)
 *   - tools: each of a known type; a function needs `name`, a file_search `vector_store_ids`
 *   - input items of a known type; a message's role one of user, assistant, system, developer;
 *     a reasoning item sent back with store false needs its `encrypted_content`
 *
 * The answer: with a `web_search` (or `web_search_preview`) tool, a `web_search_call` item
 * (action search, the last user text as the query) and then the message, whose text carries a
 * url_citation; the search's results count as WEB_SEARCH_INPUT_TOKENS input tokens, as
 * OpenAI bills the search content the model reads. Otherwise the message alone. Directives in
 * the last user text: mock:tokens=N (words of the reply, bounded by max_output_tokens: the
 * Response is then incomplete), mock:text=WORD (the reply is WORD repeated), mock:cache (3
 * input tokens cached); mock:status=CODE and mock:latency=MS are handled by the caller. The
 * search's query is the last user text without the directives.
 *
 * Agent mode (planAgentResponse, ./mock-agent.ts): a `function_call` of the request's shell
 * tool, streamed as its argument deltas, or, once its output follows the model's last item, a
 * message quoting it. Output tokens: the message's words, or 8 and the words of the arguments.
 */
import { agentAnswer, agentCall, agentNoShell, resultText } from "./mock-agent.ts";
import { countWords, replyWords, sseEvent } from "./mock-provider.ts";

type ErrorSpec = [message: string, type: string, param: string | null, code: string | null];

/** Input tokens a web search adds: the search results the model reads. */
export const WEB_SEARCH_INPUT_TOKENS = 20;
export const MOCK_SEARCH_URL = "https://example.com/mock-search-result";
const DEFAULT_WORDS = 10;

/** Every top-level field OpenAI's Responses API takes. */
const FIELDS = new Set([
  "model",
  "input",
  "instructions",
  "previous_response_id",
  "conversation",
  "stream",
  "stream_options",
  "store",
  "background",
  "tools",
  "tool_choice",
  "parallel_tool_calls",
  "max_output_tokens",
  "max_tool_calls",
  "temperature",
  "top_p",
  "top_logprobs",
  "text",
  "reasoning",
  "metadata",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "service_tier",
  "include",
  "truncation",
  "prompt",
  "context_management",
  // what Codex CLI 0.171.0 sends OpenAI's API (test/fixtures/agents/)
  "client_metadata",
]);

const TOOL_TYPES = [
  "function",
  "custom",
  "web_search",
  "web_search_2025_08_26",
  "web_search_preview",
  "web_search_preview_2025_03_11",
  "file_search",
  "code_interpreter",
  "image_generation",
  "computer_use_preview",
  "local_shell",
  "mcp",
  // a group of function tools under one name (Codex's multi-agent tools)
  "namespace",
];

const ITEM_TYPES = new Set([
  "message",
  "function_call",
  "function_call_output",
  "custom_tool_call",
  "custom_tool_call_output",
  "reasoning",
  "item_reference",
  "web_search_call",
  "file_search_call",
  "code_interpreter_call",
  "image_generation_call",
  "computer_call",
  "computer_call_output",
  "local_shell_call",
  "local_shell_call_output",
  "mcp_list_tools",
  "mcp_call",
  "mcp_approval_request",
  "mcp_approval_response",
  // tools a turn adds to the conversation (Codex sends its tools so with its own models)
  "additional_tools",
]);

const ROLES = new Set(["user", "assistant", "system", "developer"]);

const invalid = (message: string, param: string | null, code: string | null): ErrorSpec => [
  message,
  "invalid_request_error",
  param,
  code,
];

/** Why OpenAI would refuse this body (400), or undefined. */
export function responsesProblem(body: any): ErrorSpec | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return invalid("The request body must be a JSON object.", null, null);
  for (const field of Object.keys(body))
    if (!FIELDS.has(field)) return invalid(`Unknown parameter: '${field}'.`, field, "unknown_parameter");
  if (typeof body.model !== "string" || !body.model)
    return invalid("Missing required parameter: 'model'.", "model", "missing_required_parameter");
  if (body.input === undefined && body.previous_response_id === undefined)
    return invalid("Missing required parameter: 'input'.", "input", "missing_required_parameter");
  if (
    body.max_output_tokens != null &&
    !(Number.isInteger(body.max_output_tokens) && body.max_output_tokens >= 16)
  )
    return invalid(
      `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${body.max_output_tokens} instead.`,
      "max_output_tokens",
      "integer_below_min_value",
    );
  if (body.previous_response_id != null)
    return invalid(
      `Previous response with id '${body.previous_response_id}' not found.`,
      "previous_response_id",
      "previous_response_not_found",
    );
  if (body.tools != null) {
    if (!Array.isArray(body.tools))
      return invalid("Invalid type for 'tools': expected an array.", "tools", "invalid_type");
    for (const [i, tool] of body.tools.entries()) {
      if (!TOOL_TYPES.includes(tool?.type))
        return invalid(
          `Invalid value: '${tool?.type}'. Supported values are: ${TOOL_TYPES.map((t) => `'${t}'`).join(", ")}.`,
          `tools[${i}].type`,
          "invalid_value",
        );
      if ((tool.type === "function" || tool.type === "custom") && typeof tool.name !== "string")
        return invalid(
          `Missing required parameter: 'tools[${i}].name'.`,
          `tools[${i}].name`,
          "missing_required_parameter",
        );
      if (tool.type === "file_search" && !Array.isArray(tool.vector_store_ids))
        return invalid(
          `Missing required parameter: 'tools[${i}].vector_store_ids'.`,
          `tools[${i}].vector_store_ids`,
          "missing_required_parameter",
        );
    }
  }
  if (Array.isArray(body.input))
    for (const [i, item] of body.input.entries()) {
      const type = item?.type ?? (item?.role !== undefined ? "message" : undefined);
      if (!ITEM_TYPES.has(type))
        return invalid(`Invalid value: '${item?.type}'.`, `input[${i}].type`, "invalid_value");
      if (type === "message" && !ROLES.has(item.role))
        return invalid(`Invalid value: '${item.role}'.`, `input[${i}].role`, "invalid_value");
      if (type === "reasoning" && body.store === false && !item.encrypted_content)
        return invalid(
          `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or include the item's encrypted_content.`,
          "input",
          null,
        );
      if (type === "web_search_call" && (typeof item.id !== "string" || typeof item.status !== "string"))
        return invalid(
          `Missing required parameter: 'input[${i}].id'.`,
          `input[${i}].id`,
          "missing_required_parameter",
        );
    }
  else if (body.input !== undefined && typeof body.input !== "string")
    return invalid("Invalid type for 'input': expected a string or an array.", "input", "invalid_type");
  return undefined;
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content
          .map((p) => (typeof p?.text === "string" ? p.text : ""))
          .filter(Boolean)
          .join(" ")
      : "";

/** The words the model read (the input texts and the instructions), and the last user text. */
export function readInput(body: any): { words: number; lastUser: string } {
  const items: any[] = typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input;
  let words = countWords(typeof body.instructions === "string" ? body.instructions : "");
  let lastUser = "";
  for (const item of items) {
    const text = textOf(item?.content ?? item?.output);
    words += countWords(text);
    if ((item?.type ?? "message") === "message" && item.role === "user") lastUser = text;
  }
  return { words, lastUser };
}

let seq = 0;
const id = (prefix: string) => `${prefix}_mock${(++seq).toString(36).padStart(8, "0")}`;

/** One answer, planned: its Response (finished) and what streaming it sends. */
export interface ResponsesPlan {
  response: Record<string, any>;
  /** the reply's words, one delta each */
  pieces: string[];
}

export function planResponse(
  body: any,
  d: Map<string, string>,
  input: { words: number; lastUser: string },
): ResponsesPlan {
  const search = (body.tools ?? []).some((t: any) => /^web_search/.test(t?.type));
  const bound = Number.isInteger(body.max_output_tokens) ? (body.max_output_tokens as number) : undefined;
  const asked = Number.parseInt(d.get("tokens") ?? "", 10);
  let words = Number.isFinite(asked) && asked >= 0 ? asked : DEFAULT_WORDS;
  const cut = bound !== undefined && words >= bound;
  if (cut) words = bound!;
  const word = d.get("text");
  const pieces = word ? Array.from({ length: words }, (_, i) => (i ? ` ${word}` : word)) : replyWords(words);
  const text = pieces.join("");
  const output: any[] = [];
  if (search)
    output.push({
      id: id("ws"),
      type: "web_search_call",
      status: "completed",
      // the question, as a model would search it: the mock's directives are no part of it
      action: {
        type: "search",
        query: input.lastUser.replace(/\s*mock:\S+/g, "").trim(),
        sources: [{ type: "url", url: MOCK_SEARCH_URL }],
      },
    });
  output.push({
    id: id("msg"),
    type: "message",
    status: cut ? "incomplete" : "completed",
    role: "assistant",
    content: [
      {
        type: "output_text",
        text,
        annotations: search
          ? [
              {
                type: "url_citation",
                start_index: 0,
                end_index: text.length,
                url: MOCK_SEARCH_URL,
                title: "Mock result",
              },
            ]
          : [],
        logprobs: [],
      },
    ],
  });
  const inputTokens = Math.max(1, input.words) + (search ? WEB_SEARCH_INPUT_TOKENS : 0);
  const response = {
    id: id("resp"),
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status: cut ? "incomplete" : "completed",
    background: false,
    ...(cut ? {} : { completed_at: Math.floor(Date.now() / 1000) }),
    error: null,
    incomplete_details: cut ? { reason: "max_output_tokens" } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    model: body.model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    service_tier: "default",
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: { format: { type: "text" }, verbosity: "medium", ...body.text },
    tool_choice: body.tool_choice ?? "auto",
    tools: (body.tools ?? []).map((t: any) =>
      /^web_search/.test(t.type)
        ? { search_context_size: "medium", user_location: null, filters: null, ...t }
        : t,
    ),
    top_logprobs: 0,
    top_p: body.top_p ?? 1,
    truncation: "disabled",
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: d.has("cache") ? Math.min(3, inputTokens) : 0 },
      output_tokens: words,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + words,
    },
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
  return { response, pieces };
}

/** The function and custom tools a request declares: its tools, namespaces and additional_tools items opened. */
function declaredTools(body: any): any[] {
  const open = (tools: unknown): any[] =>
    Array.isArray(tools) ? tools.flatMap((t: any) => (t?.type === "namespace" ? open(t.tools) : [t])) : [];
  const added = Array.isArray(body.input)
    ? body.input.filter((i: any) => i?.type === "additional_tools").flatMap((i: any) => open(i.tools))
    : [];
  return [...open(body.tools), ...added];
}

/**
 * The call of agent mode's first turn (./mock-agent.ts): a function call of a shell tool, or a
 * custom tool call of Codex's code-mode `exec` with its script.
 */
function agentResponsesCall(
  tools: any[],
):
  | { type: "function_call"; name: string; arguments: string }
  | { type: "custom_tool_call"; name: string; input: string }
  | undefined {
  const call = agentCall(
    tools
      .filter((t) => t?.type === "function" || t?.type === "custom")
      .map((t) => ({
        name: t.name,
        schema: t.parameters,
        description: t.description,
        freeform: t.type === "custom",
      })),
  );
  if (!call) return undefined;
  return "text" in call
    ? { type: "custom_tool_call", name: call.name, input: call.text }
    : { type: "function_call", name: call.name, arguments: JSON.stringify(call.input) };
}

/** Agent mode's answer (./mock-agent.ts): the shell tool's call, or the text after its output. */
export function planAgentResponse(body: any, input: { words: number; lastUser: string }): ResponsesPlan {
  const items: any[] = Array.isArray(body.input) ? body.input : [];
  const last = items.findLastIndex(
    (i) => i?.type === "function_call" || i?.type === "custom_tool_call" || i?.role === "assistant",
  );
  const results = items
    .slice(last + 1)
    .filter((i) => i?.type === "function_call_output" || i?.type === "custom_tool_call_output");
  const tools = declaredTools(body);
  const call = results.length ? undefined : agentResponsesCall(tools);
  const text = results.length
    ? agentAnswer(results.map((r) => resultText(r.output)).join("\n"))
    : call
      ? ""
      : agentNoShell(tools.map((t) => ({ name: t.name, schema: undefined })));
  const plan = planResponse({ ...body, tools: [] }, new Map([["tokens", "0"]]), input);
  const { response } = plan;
  response.tools = body.tools ?? [];
  let output: number;
  if (call) {
    const { type, name } = call;
    const payload = call.type === "function_call" ? { arguments: call.arguments } : { input: call.input };
    response.output = [{ id: id("fc"), type, status: "completed", call_id: id("call"), name, ...payload }];
    output = 8 + countWords(Object.values(payload)[0]!);
    plan.pieces = [];
  } else {
    plan.pieces = text.split(" ").map((w, i) => (i ? ` ${w}` : w));
    response.output[0].content[0].text = text;
    output = plan.pieces.length;
  }
  const inputTokens = Math.max(1, input.words);
  response.usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + output,
  };
  return plan;
}

/** The SSE events of a planned answer, in OpenAI's order, numbered. */
export function responseEvents(plan: ResponsesPlan): string[] {
  let n = 0;
  const events: string[] = [];
  const send = (type: string, fields: Record<string, unknown>) =>
    events.push(sseEvent({ type, sequence_number: n++, ...fields }, type));
  const { response } = plan;
  const { completed_at: _completed, ...rest } = response;
  const opening = { ...rest, status: "in_progress", output: [], usage: null, incomplete_details: null };
  send("response.created", { response: opening });
  send("response.in_progress", { response: opening });
  response.output.forEach((item: any, output_index: number) => {
    if (item.type === "web_search_call") {
      const { action: _action, ...started } = item;
      send("response.output_item.added", { output_index, item: { ...started, status: "in_progress" } });
      send("response.web_search_call.in_progress", { output_index, item_id: item.id });
      send("response.web_search_call.searching", { output_index, item_id: item.id });
      send("response.web_search_call.completed", { output_index, item_id: item.id });
      send("response.output_item.done", { output_index, item });
      return;
    }
    if (item.type === "function_call") {
      send("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", arguments: "" },
      });
      const cut = Math.ceil(item.arguments.length / 2);
      for (const delta of [item.arguments.slice(0, cut), item.arguments.slice(cut)])
        send("response.function_call_arguments.delta", { item_id: item.id, output_index, delta });
      send("response.function_call_arguments.done", {
        item_id: item.id,
        output_index,
        name: item.name,
        arguments: item.arguments,
      });
      send("response.output_item.done", { output_index, item });
      return;
    }
    if (item.type === "custom_tool_call") {
      send("response.output_item.added", {
        output_index,
        item: { ...item, status: "in_progress", input: "" },
      });
      const cut = Math.ceil(item.input.length / 2);
      for (const delta of [item.input.slice(0, cut), item.input.slice(cut)])
        send("response.custom_tool_call_input.delta", { item_id: item.id, output_index, delta });
      send("response.custom_tool_call_input.done", { item_id: item.id, output_index, input: item.input });
      send("response.output_item.done", { output_index, item });
      return;
    }
    const part = item.content[0];
    send("response.output_item.added", {
      output_index,
      item: { ...item, status: "in_progress", content: [] },
    });
    const at = { item_id: item.id, output_index, content_index: 0 };
    send("response.content_part.added", { ...at, part: { ...part, text: "", annotations: [] } });
    for (const delta of plan.pieces) send("response.output_text.delta", { ...at, delta, logprobs: [] });
    for (const [annotation_index, annotation] of (part.annotations as unknown[]).entries())
      send("response.output_text.annotation.added", { ...at, annotation_index, annotation });
    send("response.output_text.done", { ...at, text: part.text, logprobs: [] });
    send("response.content_part.done", { ...at, part });
    send("response.output_item.done", { output_index, item });
  });
  send(response.status === "incomplete" ? "response.incomplete" : "response.completed", { response });
  return events;
}
