// Custom tools (OpenAI's free-form tools: the model writes one string, optionally shaped by a
// grammar; Codex's `apply_patch` is one) for upstreams that only know function tools. The
// request's custom tools become function tools taking one string argument, `input`, whose
// description carries the tool's format (the grammar, when it has one); the calls the model
// makes of them come back as custom tool calls, so the client sees the tool it defined.
// Upstreams that speak OpenAI's custom tools get the request as it is.
import type { ChatRequest } from "../domain/chat-request.ts";
import type { Chunk, Completion } from "../domain/completion.ts";
import type { Provider } from "./types.ts";

type Tool = NonNullable<ChatRequest["tools"]>[number];
type Message = ChatRequest["messages"][number];

interface CustomToolDef {
  name: string;
  description?: string;
  format?: { type?: string; grammar?: { syntax?: string; definition?: string } };
}

/** The request's custom tools by name; empty when it has none. */
export function customToolNames(request: ChatRequest): Set<string> {
  const names = new Set<string>();
  for (const tool of request.tools ?? []) {
    const name = customDef(tool)?.name;
    if (name !== undefined) names.add(name);
  }
  return names;
}

function customDef(tool: Tool): CustomToolDef | undefined {
  if (tool.type !== "custom") return undefined;
  const def = (tool as { custom?: CustomToolDef }).custom;
  return typeof def?.name === "string" ? def : undefined;
}

/** What the one `input` argument of a custom tool's function must hold. */
function inputDescription(def: CustomToolDef): string {
  const grammar = def.format?.type === "grammar" ? def.format.grammar : undefined;
  const base = "The tool's whole input, as one string of free-form text (not JSON).";
  if (!grammar?.definition) return base;
  return `${base} It must match this ${grammar.syntax ?? ""} grammar:\n${grammar.definition}`;
}

function asFunction(def: CustomToolDef): Tool {
  return {
    type: "function",
    function: {
      name: def.name,
      ...(def.description === undefined ? {} : { description: def.description }),
      parameters: {
        type: "object",
        properties: { input: { type: "string", description: inputDescription(def) } },
        required: ["input"],
        additionalProperties: false,
      },
    },
  };
}

/**
 * The request with its custom tools as function tools: the tools, a tool_choice naming one,
 * and the earlier assistant turns' calls of them (their input as the `input` argument). The
 * same request when it has none.
 */
export function customToolsAsFunctions(request: ChatRequest): ChatRequest {
  const hasCustomTool = request.tools?.some((t) => customDef(t) !== undefined) ?? false;
  const hasCustomCall = request.messages.some(
    (m) => m.role === "assistant" && m.tool_calls?.some((c) => c.type === "custom"),
  );
  if (!hasCustomTool && !hasCustomCall) return request;
  const out: ChatRequest = { ...request };
  if (request.tools)
    out.tools = request.tools.map((tool) => {
      const def = customDef(tool);
      return def ? asFunction(def) : tool;
    });
  const choice = request.tool_choice as { type?: string; custom?: { name?: unknown } } | string | undefined;
  if (typeof choice === "object" && choice.type === "custom" && typeof choice.custom?.name === "string")
    out.tool_choice = { type: "function", function: { name: choice.custom.name } };
  if (hasCustomCall)
    out.messages = request.messages.map((m): Message => {
      if (m.role !== "assistant" || !m.tool_calls?.some((c) => c.type === "custom")) return m;
      return {
        ...m,
        tool_calls: m.tool_calls.map((c) => {
          if (c.type !== "custom") return c;
          const { name, input } = c.custom as { name: string; input: string };
          return { id: c.id, type: "function", function: { name, arguments: JSON.stringify({ input }) } };
        }),
      };
    });
  return out;
}

/** The custom call a function call of a custom tool stands for: its `input`, else the raw arguments. */
function customCall(id: unknown, name: string, args: string) {
  let input = args;
  try {
    const parsed = JSON.parse(args) as { input?: unknown };
    if (typeof parsed?.input === "string") input = parsed.input;
  } catch {}
  return { id, type: "custom", custom: { name, input } };
}

/** The completion with the function calls of custom tools turned back into custom calls. */
export function restoreCustomCalls(completion: Completion, names: ReadonlySet<string>): Completion {
  if (!names.size) return completion;
  for (const choice of completion.choices) {
    const calls = choice.message.tool_calls;
    if (!Array.isArray(calls)) continue;
    choice.message.tool_calls = calls.map((call) => {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } }).function;
      return typeof fn?.name === "string" && names.has(fn.name)
        ? customCall(
            (call as { id?: unknown }).id,
            fn.name,
            typeof fn.arguments === "string" ? fn.arguments : "",
          )
        : call;
    });
  }
  return completion;
}

interface PendingCall {
  id: unknown;
  name: string;
  args: string;
}

/**
 * The stream with the function calls of custom tools turned back into custom calls. A
 * custom call's input is its argument's JSON string, which only parses whole: the call's
 * deltas are held and it is sent as one delta, just before its choice's finish (or at the
 * end, for a stream that has none). Other deltas pass as they come.
 */
export function restoreCustomCallChunks(
  chunks: AsyncIterable<Chunk>,
  names: ReadonlySet<string>,
): AsyncIterable<Chunk> {
  // Without custom tools the chunks pass untouched: a generator around them would cost
  // promises on every chunk of every stream.
  return names.size ? restoring(chunks, names) : chunks;
}

async function* restoring(chunks: AsyncIterable<Chunk>, names: ReadonlySet<string>): AsyncGenerator<Chunk> {
  /** choice index -> tool-call index -> the call being held; null: a function call passed on */
  const held = new Map<number, Map<number, PendingCall | null>>();
  let last: Chunk | undefined;
  const release = (choice: number, chunk: Chunk): Chunk | undefined => {
    const calls = held.get(choice);
    held.delete(choice);
    const tool_calls = [...(calls ?? [])]
      .filter((entry): entry is [number, PendingCall] => entry[1] !== null)
      .map(([index, call]) => ({ index, ...customCall(call.id, call.name, call.args) }));
    if (!tool_calls.length) return undefined;
    return {
      ...chunk,
      choices: [{ index: choice, delta: { tool_calls }, finish_reason: null }],
      usage: undefined,
    };
  };
  for await (const chunk of chunks) {
    last = chunk;
    const before: Chunk[] = [];
    for (const choice of chunk.choices) {
      const deltas = choice.delta.tool_calls;
      if (Array.isArray(deltas)) {
        const calls = held.get(choice.index) ?? new Map<number, PendingCall | null>();
        held.set(choice.index, calls);
        const passed = [];
        for (const delta of deltas as Array<Record<string, unknown>>) {
          const index = typeof delta.index === "number" ? delta.index : 0;
          const fn = delta.function as { name?: unknown; arguments?: unknown } | undefined;
          let call = calls.get(index);
          if (call === undefined) {
            call =
              typeof fn?.name === "string" && names.has(fn.name)
                ? { id: delta.id, name: fn.name, args: "" }
                : null;
            calls.set(index, call);
          }
          if (call === null) passed.push(delta);
          else if (typeof fn?.arguments === "string") call.args += fn.arguments;
        }
        if (passed.length) choice.delta.tool_calls = passed;
        else delete choice.delta.tool_calls;
      }
      if (choice.finish_reason !== null) {
        const released = release(choice.index, chunk);
        if (released) before.push(released);
      }
    }
    yield* before;
    // a chunk that carried nothing but held deltas is not sent (its choice has nothing left)
    if (
      chunk.usage ||
      !chunk.choices.length ||
      chunk.choices.some((c) => c.finish_reason !== null || Object.keys(c.delta).length)
    )
      yield chunk;
  }
  if (last)
    for (const choice of [...held.keys()]) {
      const released = release(choice, last);
      if (released) yield released;
    }
}

/**
 * The provider with the calls of the custom tools it sends as function tools turned back into
 * custom calls, so that no adapter does it itself. The provider's own object, changed in place
 * rather than wrapped: its other members keep their identity (src/routing/candidates.ts asks
 * each prompt bound function once) and their `this` (adapters keep private fields).
 */
export function restoringCustomCalls(provider: Provider): Provider {
  if (!provider.sendsCustomToolsAsFunctions) return provider;
  const asFunctions = provider.sendsCustomToolsAsFunctions.bind(provider);
  const complete = provider.complete.bind(provider);
  const stream = provider.stream.bind(provider);
  provider.complete = async (call) => {
    const completion = await complete(call);
    return asFunctions(call) ? restoreCustomCalls(completion, customToolNames(call.request)) : completion;
  };
  // Not a generator: a refusal the adapter throws as the stream is asked for stays thrown there.
  provider.stream = (call) => {
    const chunks = stream(call);
    return asFunctions(call) ? restoreCustomCallChunks(chunks, customToolNames(call.request)) : chunks;
  };
  return provider;
}
