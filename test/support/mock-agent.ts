// The scripted agent model of the mock upstreams' agent mode (`agent: true`), which the
// conformance suite (test/agents/) runs real coding clients against: the first turn calls a
// shell tool the client sent, with a command that writes a marker file and prints it; the turn
// after the tool's result answers with text that quotes the result. Every wire format (Messages,
// chat completions, Responses, Gemini) asks the same two things of it: which tool to call, with what
// arguments, and what to say once the result came back.
//
// Codex's "code mode" (its own models) offers no shell tool but one `exec` tool that runs
// JavaScript, whose `tools.exec_command(...)` runs a command: the agent then writes that script.
// It is a free-form (custom) tool in Responses, possibly in a namespace; a gateway may pass it
// on as a custom tool, as a function of one string argument, or under a flattened name
// (`functions__exec`): the agent recognises it by name and description in each form.

/** The file the agent's command writes in the client's working directory, and what it writes. */
export const AGENT_MARKER = { file: "marker.txt", text: "agent-ok" } as const;

/** The shell command the agent runs: the marker written, then read back as the tool's output. */
export const AGENT_COMMAND = `echo ${AGENT_MARKER.text} > ${AGENT_MARKER.file} && cat ${AGENT_MARKER.file}`;

/** How the final answer starts: the rest is the tool's output, on one line. */
export const AGENT_DONE = "DONE:";

/**
 * The shell tools of the clients, in the order the agent prefers them: Claude Code's `Bash`,
 * Codex's `exec_command` (unified exec) and its older `shell_command` and `shell`, Gemini
 * CLI's `run_shell_command`.
 */
export const AGENT_SHELLS = ["Bash", "exec_command", "shell_command", "shell", "run_shell_command"] as const;

/** A tool as a request declares it: its name and the JSON schema of its arguments. */
export interface AgentTool {
  name: string;
  schema: unknown;
  description?: unknown;
  /** a free-form (custom) tool: its call is one string, not arguments */
  freeform?: boolean;
}

/** A call the agent makes: arguments, or a free-form tool's string. */
export type AgentCall = { name: string; input: Record<string, unknown> } | { name: string; text: string };

/** The script Codex's code-mode `exec` tool is given: the command through its nested exec_command. */
export const CODE_MODE_SCRIPT = `const result = await tools.exec_command({ cmd: ${JSON.stringify(AGENT_COMMAND)} });\ntext(result);`;

/** Whether a tool is Codex's code-mode `exec` (under its name, or a flattened `<namespace>__exec`). */
const isCodeModeExec = (t: AgentTool): boolean =>
  /(^|__|\.|\/)exec$/.test(t.name) &&
  typeof t.description === "string" &&
  t.description.includes("tools.exec_command");

type Schema = { properties?: Record<string, { type?: unknown }>; required?: unknown };

/**
 * The call of the first turn: the preferred shell tool among the request's, its command
 * property (`command` as a string or an argv array, or `cmd`) set to AGENT_COMMAND and its
 * other required properties to plain values. Undefined when the request has no shell tool.
 */
export function agentCall(tools: readonly AgentTool[]): AgentCall | undefined {
  const tool = AGENT_SHELLS.map((name) => tools.find((t) => t.name === name && !t.freeform)).find(
    (t) => t !== undefined,
  );
  if (!tool) return codeModeCall(tools);
  const schema = (tool.schema ?? {}) as Schema;
  const properties = schema.properties ?? {};
  const input: Record<string, unknown> = {};
  const typeOf = (name: string) => {
    const type = properties[name]?.type;
    return Array.isArray(type) ? type[0] : type;
  };
  const command = "command" in properties ? "command" : "cmd" in properties ? "cmd" : "command";
  input[command] = typeOf(command) === "array" ? ["bash", "-lc", AGENT_COMMAND] : AGENT_COMMAND;
  if ("description" in properties) input.description = "Write the marker file and read it back";
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  for (const name of required) {
    if (name in input) continue;
    const type = typeOf(name);
    input[name] =
      type === "number" || type === "integer"
        ? 10_000
        : type === "boolean"
          ? false
          : type === "array"
            ? []
            : type === "object"
              ? {}
              : "agent";
  }
  return { name: tool.name, input };
}

/** The call of Codex's code-mode `exec` tool, in the form the request declares it; undefined without one. */
function codeModeCall(tools: readonly AgentTool[]): AgentCall | undefined {
  const exec = tools.find(isCodeModeExec);
  if (!exec) return undefined;
  if (exec.freeform) return { name: exec.name, text: CODE_MODE_SCRIPT };
  // a function of one string argument (`input`, as gateways encode free-form tools)
  const schema = (exec.schema ?? {}) as Schema;
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  const property = required[0] ?? Object.keys(schema.properties ?? {})[0] ?? "input";
  return { name: exec.name, input: { [property]: CODE_MODE_SCRIPT } };
}

/** The final answer, once the tool's result came back: AGENT_DONE and the output on one line. */
export function agentAnswer(toolOutput: string): string {
  const line = toolOutput.replace(/\s+/g, " ").trim();
  return `${AGENT_DONE} ${line.length > 400 ? `${line.slice(0, 400)}…` : line}`;
}

/** What the agent says when the request offers no shell tool: the names it got, so a test fails naming them. */
export function agentNoShell(tools: readonly AgentTool[]): string {
  return `NO SHELL TOOL among: ${tools.map((t) => t.name).join(", ") || "(none)"}`;
}

/** The text of a tool result's content: a string, or the text of its parts. */
export function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p) => (typeof p === "string" ? p : typeof p?.text === "string" ? p.text : ""))
    .filter(Boolean)
    .join("\n");
}
