// The built-in demo model: answers deterministically, offline, in OpenAI's shapes, so the
// first call after `npm start` works with no upstream at all. It reports usage the way a
// real upstream does, counted with the local tokenizer: its answer (a few hundred characters)
// here, the prompt (a whole request body) on the estimator's thread, so a long prompt does
// not stall the event loop (src/tokens/estimator.ts).

import type { Chunk, Completion, FinishReason, Usage } from "../../domain/completion.ts";
import { messageText, tokenizer } from "../../tokens/count.ts";
import { estimator } from "../../tokens/estimator.ts";
import { promptParts, promptUpperBound } from "../prompt-bound.ts";
import type { Provider, UpstreamCall } from "../types.ts";

const PLAIN = { disallowedSpecial: new Set<string>() };

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
  const { encode, decode } = tokenizer();
  const tokens = encode(full, PLAIN);
  if (tokens.length > call.outputBound)
    return { text: decode(tokens.slice(0, call.outputBound)), tokens: call.outputBound, finish: "length" };
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

  async close(): Promise<void> {}
}
