/** The built-in tools an operator may allow, by the `type` OpenAI's Responses API gives them. */
export const BUILTIN_TOOLS = [
  "web_search",
  "web_search_preview",
  "file_search",
  "code_interpreter",
  "image_generation",
  "computer_use_preview",
  "local_shell",
  "mcp",
  "tool_search",
] as const;

export type BuiltinTool = (typeof BUILTIN_TOOLS)[number];

/** The output items built-in tools produce, which a later turn sends back as input. */
export const BUILTIN_ITEM_TYPES = [
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
  "tool_search_call",
  "tool_search_output",
] as const;

export type BuiltinItemType = (typeof BUILTIN_ITEM_TYPES)[number];

/** The tools whose items they are: sending one back needs one of its tools allowed. */
const BUILTIN_ITEMS: Readonly<Record<string, readonly BuiltinTool[] | undefined>> = {
  web_search_call: ["web_search", "web_search_preview"],
  file_search_call: ["file_search"],
  code_interpreter_call: ["code_interpreter"],
  image_generation_call: ["image_generation"],
  computer_call: ["computer_use_preview"],
  computer_call_output: ["computer_use_preview"],
  local_shell_call: ["local_shell"],
  local_shell_call_output: ["local_shell"],
  mcp_list_tools: ["mcp"],
  mcp_call: ["mcp"],
  mcp_approval_request: ["mcp"],
  mcp_approval_response: ["mcp"],
  tool_search_call: ["tool_search"],
  tool_search_output: ["tool_search"],
} satisfies Record<BuiltinItemType, readonly BuiltinTool[]>;

/** One use of a built-in tool in a request: the tool, or the item it made, and where it is. */
export interface BuiltinToolUse {
  /** the tool's type (`web_search`), or the item's type (`web_search_call`) */
  type: string;
  /** the parameter naming it (`tools[0]`, `tool_choice`, `input[2]`, `previous_response_id`) */
  param: string;
}

/**
 * The tool family a dated type belongs to (`web_search_preview_2025_03_11` is
 * `web_search_preview`): OpenAI versions some tools by date, an operator allows the tool.
 */
const undated = (type: string): string => type.replace(/_\d{4}_\d{2}_\d{2}$/, "");

/** Whether a use is allowed by a set of allowed tools. */
export function builtinAllowed(use: BuiltinToolUse, tools: ReadonlySet<string>): boolean {
  const item = BUILTIN_ITEMS[use.type];
  if (item) return item.some((tool) => tools.has(tool));
  return tools.has(undated(use.type));
}

/** Why a built-in tool is not passed on: what a strict provider's refusal says. */
export const BUILTIN_REFUSAL =
  "built-in tools run at OpenAI, outside the gateway's token accounting, and pass only to OpenAI upstreams whose operator allows them; define a function tool instead";

/**
 * A native Responses body without the built-in tools the provider does not allow (its `tools`
 * entries, and a `tool_choice` naming one): what was taken out, for notices. The items such
 * tools made earlier stay: they are history, which the upstream reads as it is.
 */
export function withoutDisallowedTools(
  body: Readonly<Record<string, unknown>>,
  uses: readonly BuiltinToolUse[],
  allowedTools: ReadonlySet<string>,
): { body: Readonly<Record<string, unknown>>; removed: BuiltinToolUse[] } {
  const removed = uses.filter(
    (u) => (u.param.startsWith("tools[") || u.param === "tool_choice") && !builtinAllowed(u, allowedTools),
  );
  if (!removed.length) return { body, removed };
  const out: Record<string, unknown> = { ...body };
  const gone = new Set(removed.filter((u) => u.param !== "tool_choice").map((u) => u.type));
  if (Array.isArray(out.tools))
    out.tools = (out.tools as Array<{ type?: unknown }>).filter((t) => !gone.has(t?.type as string));
  if (removed.some((u) => u.param === "tool_choice")) delete out.tool_choice;
  return { body: out, removed };
}
