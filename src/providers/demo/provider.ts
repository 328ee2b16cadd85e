// The built-in demo model: answers deterministically, offline, in OpenAI's shapes, so the
// first call after `npm start` works with no upstream at all. It reports usage the way a
// real upstream does, counted with the local tokenizer.
import { decode, encode } from "gpt-tokenizer";
import { countPromptTokens, messageText } from "../../tokens/count.ts";
import type { ChatCompletion, ChatCompletionChunk, Provider, UpstreamRequest } from "../types.ts";

const PLAIN = { disallowedSpecial: new Set<string>() };

function reply(request: UpstreamRequest): { text: string; tokens: number; truncated: boolean } {
  const messages = (request.body.messages ?? []) as Record<string, unknown>[];
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const said = messageText(lastUser?.content).text.trim().replace(/\s+/g, " ");
  const quoted = said.length > 200 ? `${said.slice(0, 200)}…` : said;
  const full = said
    ? `Hello from the demo model. You said: "${quoted}". Point the gateway at a real upstream to get real answers.`
    : "Hello from the demo model. Point the gateway at a real upstream to get real answers.";
  const bound = (request.body.max_completion_tokens ?? request.body.max_tokens) as number | undefined;
  const tokens = encode(full, PLAIN);
  if (bound !== undefined && tokens.length > bound)
    return { text: decode(tokens.slice(0, bound)), tokens: bound, truncated: true };
  return { text: full, tokens: tokens.length, truncated: false };
}

function usage(request: UpstreamRequest, completion: number) {
  const prompt = countPromptTokens((request.body.messages ?? []) as Record<string, unknown>[]);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export class DemoProvider implements Provider {
  readonly id: string;

  constructor(id: string) {
    this.id = id;
  }

  async complete(request: UpstreamRequest): Promise<ChatCompletion> {
    request.signal.throwIfAborted();
    const { text, tokens, truncated } = reply(request);
    return {
      id: `chatcmpl-demo`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: request.model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: text, refusal: null },
          logprobs: null,
          finish_reason: truncated ? "length" : "stop",
        },
      ],
      usage: usage(request, tokens),
    };
  }

  async *stream(request: UpstreamRequest): AsyncGenerator<ChatCompletionChunk> {
    const { text, tokens, truncated } = reply(request);
    const base = { id: "chatcmpl-demo", object: "chat.completion.chunk" as const, model: request.model };
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Record<string, unknown>, finish: string | null): ChatCompletionChunk => ({
      ...base,
      created,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    yield chunk({ role: "assistant", content: "" }, null);
    for (const word of text.split(/(?<= )/)) {
      request.signal.throwIfAborted();
      yield chunk({ content: word }, null);
    }
    yield chunk({}, truncated ? "length" : "stop");
    yield { ...base, created, choices: [], usage: usage(request, tokens) };
  }

  async close(): Promise<void> {}
}
