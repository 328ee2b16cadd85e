// The built-in demo model: answers deterministically, offline, in OpenAI's shapes, so the
// first call after `npm start` works with no upstream at all. It reports usage the way a
// real upstream does, counted with the local tokenizer: its answer (a few hundred characters)
// here, the prompt (a whole request body) on the estimator's thread, so a long prompt does
// not stall the event loop (src/tokens/estimator.ts).

import type { Chunk, Completion, FinishReason, Usage } from "../../domain/completion.ts";
import { messageText } from "../../tokens/count.ts";
import { estimator } from "../../tokens/estimator.ts";
import { o200k } from "../../tokens/o200k.ts";
import { embeddingExtras } from "../passthrough.ts";
import { promptParts, promptUpperBound } from "../prompt-bound.ts";
import type { EmbeddingCall, EmbeddingResult, Provider, UpstreamCall } from "../types.ts";

function reply(call: UpstreamCall): { text: string; tokens: number; finish: FinishReason } {
  const { messages } = call.request;
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  // its words, one space apart, read only as far as the answer quotes them
  let said = "";
  for (const [word] of messageText(lastUser?.content).text.matchAll(/\S+/g)) {
    said += said ? ` ${word}` : word;
    if (said.length > 200) break;
  }
  const quoted = said.length > 200 ? `${said.slice(0, 200)}…` : said;
  const full = said
    ? `Hello from the demo model. You said: "${quoted}". Point the gateway at a real upstream to get real answers.`
    : "Hello from the demo model. Point the gateway at a real upstream to get real answers.";
  const encoder = o200k();
  const tokens = encoder.encode(full);
  if (tokens.length > call.outputBound)
    return {
      text: encoder.decode(tokens.slice(0, call.outputBound)),
      tokens: call.outputBound,
      finish: "length",
    };
  return { text: full, tokens: tokens.length, finish: "stop" };
}

/** The demo's usage: the prompt counted as estimates are (the byte bound when the counting queue is full). */
async function usage(call: UpstreamCall, completion: number): Promise<Usage> {
  const { prompt } = await estimator.count(promptParts(call.request), { signal: call.signal });
  return { prompt, completion, cachedInput: 0, cacheWrite: 0, reasoning: 0 };
}

export class DemoProvider implements Provider {
  readonly id: string;

  constructor(id: string) {
    this.id = id;
  }

  promptBound = promptUpperBound;

  async complete(call: UpstreamCall): Promise<Completion> {
    call.signal.throwIfAborted();
    const { text, tokens, finish } = reply(call);
    return {
      id: `chatcmpl-demo`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: call.upstreamModel,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: text, refusal: null },
          logprobs: null,
          finish_reason: finish,
        },
      ],
      usage: await usage(call, tokens),
    };
  }

  async *stream(call: UpstreamCall): AsyncGenerator<Chunk> {
    const { text, tokens, finish } = reply(call);
    const base = { id: "chatcmpl-demo", object: "chat.completion.chunk" as const, model: call.upstreamModel };
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, reason: FinishReason | null): Chunk => ({
      ...base,
      created,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: reason }],
    });
    yield chunk({ role: "assistant", content: "" }, null);
    for (const word of text.split(/(?<= )/)) {
      call.signal.throwIfAborted();
      yield chunk({ content: word }, null);
    }
    yield chunk({}, finish);
    yield { ...base, created, choices: [], usage: await usage(call, tokens) };
  }

  /** Token ids are hashed as texts' pieces are: the demo has no vocabulary to decode them with. */
  readonly embedsTokenIds = true;

  /**
   * A deterministic embedding, offline: each text's character trigrams (each token id, for
   * token ids) hashed into signed buckets, the vector of unit length, so texts that share
   * pieces point alike. DEMO_DIMENSIONS unless `dimensions` asks for fewer or more. Usage is
   * the inputs counted as estimates are.
   */
  async embed(call: EmbeddingCall): Promise<EmbeddingResult> {
    call.signal.throwIfAborted();
    embeddingExtras(call, this.id, DEMO_PASSTHROUGH, false);
    const { inputs, dimensions } = call.request;
    const size = Math.min(dimensions ?? DEMO_DIMENSIONS, MAX_DEMO_DIMENSIONS);
    const vectors = inputs.map((input) => demoVector(input, size));
    const { prompt } = await estimator.count({ inputs }, { signal: call.signal });
    return { vectors, promptTokens: prompt };
  }

  async close(): Promise<void> {}
}

/** The demo's vectors' size when the request names none. */
export const DEMO_DIMENSIONS = 64;
/** The most the demo builds, whatever is asked: it builds them on the gateway's own thread. */
const MAX_DEMO_DIMENSIONS = 4_096;
const DEMO_PASSTHROUGH = { strict: false, deny: [] };

/** FNV-1a, 32 bits: a stable hash of a piece. */
function fnv(piece: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < piece.length; i++) h = Math.imul(h ^ piece.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export function demoVector(input: string | readonly number[], size: number): number[] {
  const v = new Array<number>(size).fill(0);
  const add = (piece: string) => {
    const h = fnv(piece);
    v[h % size]! += h & 0x8000_0000 ? -1 : 1;
  };
  if (typeof input === "string") {
    const text = ` ${input.toLowerCase()} `;
    for (let i = 0; i + 3 <= text.length; i++) add(text.slice(i, i + 3));
  } else for (const id of input) add(String(id));
  let squares = 0;
  for (const x of v) squares += x * x;
  const norm = Math.sqrt(squares) || 1;
  // rounded to float32, as vectors travel: the same numbers as JSON and as base64
  return v.map((x) => Math.fround(x / norm));
}
