// Namespace tools (Responses API: function and custom tools grouped under a name, as Codex
// sends its multi-agent tools) for upstreams without them: each inner tool becomes a tool of
// its own named `<namespace>__<name>`, and a call of that name comes back to the client as the
// namespace's call it asked for (`name` and `namespace` apart). A request's map is made from
// its tools, its additional_tools items and the stored conversation it continues.
import type {
  CustomTool,
  FunctionTool,
  InputItem,
  NamespaceTool,
  ResponsesRequest,
  ResponsesTool,
} from "./request.ts";

const SEPARATOR = "__";

/** The name a namespace's tool has for an upstream without namespaces. */
export function flatName(namespace: string, name: string): string {
  return `${namespace}${SEPARATOR}${name}`;
}

/** A tool call's name as the client knows it. */
export interface ToolName {
  name: string;
  namespace?: string;
}

/** The flattened names of a request's namespace tools, to restore calls by. */
export class ToolNamespaces {
  readonly #names = new Map<string, ToolName>();

  /** The namespaces of `tools`, and of the additional_tools items among `items`. */
  static of(tools: readonly ResponsesTool[] | undefined, items: readonly InputItem[] = []): ToolNamespaces {
    const out = new ToolNamespaces();
    for (const tool of tools ?? []) out.#add(tool);
    for (const item of items)
      if (item.type === "additional_tools" && Array.isArray(item.tools))
        for (const tool of item.tools as ResponsesTool[]) out.#add(tool);
    return out;
  }

  #add(tool: ResponsesTool): void {
    if (tool.type !== "namespace") return;
    const ns = tool as NamespaceTool;
    for (const inner of ns.tools as Array<FunctionTool | CustomTool>)
      if (typeof inner.name === "string")
        this.#names.set(flatName(ns.name, inner.name), { name: inner.name, namespace: ns.name });
  }

  get size(): number {
    return this.#names.size;
  }

  /** The client's name of a tool an upstream called by `name`. */
  restore(name: string): ToolName {
    return this.#names.get(name) ?? { name };
  }
}

export const NO_NAMESPACES = ToolNamespaces.of(undefined);

/** The namespaces of a request: its tools', and its additional_tools items'. */
export function namespacesOf(req: ResponsesRequest): ToolNamespaces {
  return ToolNamespaces.of(req.tools, typeof req.input === "string" ? [] : req.input);
}
