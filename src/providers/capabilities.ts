// What an upstream model can take, so a translation never adds a field the model refuses: a
// Claude Code turn's `thinking` becomes `reasoning_effort` only for a model that reasons
// (a chat model answers 400 to it), images go only to a model that reads them, tools only to
// one that calls them. Each model may say so in its configuration (`capabilities`); what it
// leaves out is inferred from the upstream model's name (docs/providers.md lists the rule).
// Only translated calls are fitted: a body sent natively is the client's own, as it wrote it.
import { z } from "zod";
import { noteDropped } from "./passthrough.ts";
import type { UpstreamCall } from "./types.ts";

export interface Capabilities {
  /** takes a reasoning setting (`reasoning_effort`, thinking) */
  reasoning: boolean;
  /** reads image parts */
  images: boolean;
  /** calls tools */
  tools: boolean;
}

export const capabilitiesSchema = z
  .object({
    reasoning: z.boolean().optional().describe("takes a reasoning setting (`reasoning_effort`, thinking)"),
    images: z.boolean().optional().describe("reads image parts"),
    tools: z.boolean().optional().describe("calls tools"),
  })
  .strict();

export type CapabilitiesConfig = z.output<typeof capabilitiesSchema>;

/**
 * Model families known to reason, by upstream model name: OpenAI's o-series and GPT-5,
 * Claude 3.7 and 4 and later, Gemini 2.5 and later, DeepSeek's R1 and reasoner, Qwen's QwQ
 * and Qwen3, Grok 3 mini and Grok 4. A model of another name is taken not to reason unless its
 * configuration says it does.
 */
const REASONING = [
  /(^|\/)o[1-9](-|$)/,
  /(^|\/)gpt-[5-9]/,
  /claude-(3-7|(opus|sonnet|haiku)-[4-9]|[4-9])/,
  /gemini-([2-9]\.5|[3-9])/,
  /deepseek-(r1|reasoner)/,
  /qwq|qwen3/,
  /grok-(3-mini|[4-9])/,
];

/** The capabilities of a model served as `upstreamModel`: configured, else inferred. */
export function capabilitiesOf(config: CapabilitiesConfig | undefined, upstreamModel: string): Capabilities {
  const name = upstreamModel.toLowerCase();
  return {
    reasoning: config?.reasoning ?? REASONING.some((re) => re.test(name)),
    images: config?.images ?? true,
    tools: config?.tools ?? true,
  };
}

type Message = UpstreamCall["request"]["messages"][number];

/** A message without its image parts (each noted), or itself when it has none. */
function withoutImages(m: Message, i: number, call: UpstreamCall): Message {
  if (!Array.isArray(m.content)) return m;
  const parts = m.content as Array<{ type: string }>;
  if (!parts.some((p) => p.type === "image_url")) return m;
  parts.forEach((p, j) => {
    if (p.type === "image_url") noteDropped(call, `messages[${i}].content[${j}] (image)`);
  });
  const kept = parts.filter((p) => p.type !== "image_url");
  return { ...m, content: kept.length ? kept : "" } as Message;
}

/**
 * The call's canonical request fitted to the model: what it cannot take is left out, each
 * with a notice. Copies only when something changes.
 */
export function fitCapabilities(call: UpstreamCall, caps: Capabilities): UpstreamCall {
  const req = call.request;
  let out = req;
  const edit = () => {
    if (out === req) out = { ...req };
    return out;
  };
  if (!caps.reasoning && req.reasoning_effort !== undefined) {
    delete edit().reasoning_effort;
    noteDropped(call, "reasoning_effort");
  }
  if (!caps.tools && (req.tools?.length || req.tool_choice !== undefined)) {
    const e = edit();
    if (req.tools?.length) noteDropped(call, "tools");
    delete e.tools;
    delete e.tool_choice;
    delete e.parallel_tool_calls;
  }
  if (!caps.images) {
    const messages = req.messages.map((m, i) => withoutImages(m, i, call));
    if (messages.some((m, i) => m !== req.messages[i])) edit().messages = messages;
  }
  return out === req ? call : { ...call, request: out };
}
