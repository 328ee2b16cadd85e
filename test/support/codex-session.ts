// A Codex-like coding session through the Responses API, driven with the official `openai`
// SDK as Codex CLI drives its upstream: every turn sends `instructions`, the whole conversation
// so far as `input` (the user's messages, then each output item the model streamed, with the
// outputs of the tools it called), its tools (function tools and the free-form `apply_patch`
// custom tool with a Lark grammar), `reasoning`, `store: false`, `stream: true`,
// `include: ["reasoning.encrypted_content"]` and a `prompt_cache_key`; it collects the items of
// `response.output_item.done` and ends when an answer calls no tool. The request's shape
// follows Codex's `ResponsesApiRequest` (openai/codex, codex-rs/codex-api/src/common.rs) and
// a request Codex sent (coder/aibridge, fixtures/openai/responses/streaming/codex_example.txtar);
// the texts, tools and grammar here are written for these tests.
//
// The mock upstreams are steered by `mock:` directives in the last user turn, which, once a
// tool has run, is the tool's output: each scripted output says what the model does next.
import type OpenAI from "openai";
import type { ResponseInputItem, ResponseStreamEvent, Tool } from "openai/resources/responses/responses";

export const CODEX_INSTRUCTIONS = [
  "You are a coding agent running in a terminal on the user's computer.",
  "",
  "- Use `shell_command` to look around and run tests; set `workdir`.",
  "- Edit files with `apply_patch`. It is a FREEFORM tool: write the patch itself, not JSON.",
  "- Keep the user informed with short updates; end with a brief summary.",
].join("\n");

/** A Lark grammar of the patch format, after the one Codex gives its apply_patch tool. */
export const PATCH_GRAMMAR = [
  "start: begin_patch hunk+ end_patch",
  'begin_patch: "*** Begin Patch" LF',
  'end_patch: "*** End Patch" LF?',
  "hunk: add_hunk | update_hunk",
  'add_hunk: "*** Add File: " filename LF add_line+',
  'update_hunk: "*** Update File: " filename LF change_line+',
  "filename: /(.+)/",
  'add_line: "+" /(.*)/ LF -> line',
  'change_line: ("+" | "-" | " ") /(.*)/ LF',
  "%import common.LF",
].join("\n");

export const CODEX_TOOLS: Tool[] = [
  {
    type: "function",
    name: "shell_command",
    description: "Runs a shell command and returns its output.",
    strict: false,
    parameters: {
      type: "object",
      properties: {
        command: { type: "string", description: "The shell script to run" },
        workdir: { type: "string", description: "The working directory" },
        timeout_ms: { type: "number", description: "The timeout in milliseconds" },
      },
      required: ["command"],
      additionalProperties: false,
    },
  },
  {
    type: "function",
    name: "update_plan",
    description: "Updates the task plan: a list of steps, each with a status.",
    strict: false,
    parameters: {
      type: "object",
      properties: {
        explanation: { type: "string" },
        plan: { type: "array", items: { type: "object" } },
      },
      required: ["plan"],
      additionalProperties: false,
    },
  },
  {
    type: "custom",
    name: "apply_patch",
    description:
      "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.",
    format: { type: "grammar", syntax: "lark", definition: PATCH_GRAMMAR },
  },
];

/** The session's opening turn: context messages, then the task. */
export const CODEX_OPENING: ResponseInputItem[] = [
  {
    type: "message",
    role: "developer",
    content: [{ type: "input_text", text: "<permissions>workspace-write, network restricted</permissions>" }],
  },
  {
    type: "message",
    role: "user",
    content: [
      { type: "input_text", text: "<environment_context><cwd>/work/project</cwd></environment_context>" },
    ],
  },
  {
    type: "message",
    role: "user",
    content: [
      {
        type: "input_text",
        text: "Add a hello script and check it runs. mock:call=shell_command mock:reasoning please",
      },
    ],
  },
];

/**
 * What each tool returns, in the order the model calls them: the shell shows the tree and
 * asks for the patch; the patch applies and the model answers.
 */
export const TOOL_OUTPUTS: Record<string, string> = {
  shell_command: "README.md\nsrc/\nExit code: 0 mock:call=apply_patch next",
  apply_patch: "Success. Updated the following files:\nA hello.txt\n mock:tokens=4 done",
};

export interface CodexTurn {
  /** the request body the turn sent */
  body: Record<string, unknown>;
  /** every event of the stream, in order */
  events: ResponseStreamEvent[];
  /** the items of response.output_item.done, as Codex keeps them */
  items: ResponseInputItem[];
  /** the Response of response.completed */
  completed: OpenAI.Responses.Response | undefined;
  /** the request id the gateway answered with */
  requestId: string | null;
}

/** Runs the session on `model` until an answer calls no tool (at most `maxTurns` turns). */
export async function runCodexSession(client: OpenAI, model: string, maxTurns = 5): Promise<CodexTurn[]> {
  const conversation: ResponseInputItem[] = [...CODEX_OPENING];
  const turns: CodexTurn[] = [];
  for (let n = 0; n < maxTurns; n++) {
    const body = {
      model,
      instructions: CODEX_INSTRUCTIONS,
      input: [...conversation],
      tools: CODEX_TOOLS,
      tool_choice: "auto" as const,
      parallel_tool_calls: false,
      reasoning: { effort: "medium" as const, summary: "auto" as const },
      store: false,
      stream: true as const,
      include: ["reasoning.encrypted_content" as const],
      prompt_cache_key: "00000000-0000-4000-8000-000000000001",
    };
    const { data: stream, response } = await client.responses.create(body).withResponse();
    const turn: CodexTurn = {
      body,
      events: [],
      items: [],
      completed: undefined,
      requestId: response.headers.get("x-request-id"),
    };
    for await (const event of stream) {
      turn.events.push(event);
      if (event.type === "response.output_item.done") turn.items.push(event.item as ResponseInputItem);
      if (event.type === "response.completed") turn.completed = event.response;
    }
    turns.push(turn);
    conversation.push(...turn.items);
    const calls = turn.items.filter(
      (item) => item.type === "function_call" || item.type === "custom_tool_call",
    ) as Array<{ type: "function_call" | "custom_tool_call"; call_id: string; name: string }>;
    if (!calls.length) return turns;
    for (const call of calls)
      conversation.push({
        type: call.type === "function_call" ? "function_call_output" : "custom_tool_call_output",
        call_id: call.call_id,
        output: TOOL_OUTPUTS[call.name] ?? "unknown tool",
      } as ResponseInputItem);
  }
  return turns;
}
