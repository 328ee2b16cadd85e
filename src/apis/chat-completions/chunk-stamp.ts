// Chat completion chunks as the client gets them: every chunk of one answer carries our
// completion id, the public model and one `created` (the upstream's first, else the call's
// start), and usage only where the client asked for it.
import type { Chunk, Usage } from "../../domain/completion.ts";

/** OpenAI's usage object as the upstream reported it, for a usage chunk passed on. */
function openaiUsage(usage: Usage) {
  return {
    ...usage.details,
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
  };
}

export function completionId(requestId: string): string {
  return `chatcmpl-${requestId.slice(requestId.indexOf("_") + 1)}`;
}

export class ChunkStamp {
  readonly #id: string;
  readonly #model: string;
  readonly #startedAt: number;
  #created: number | undefined;

  constructor(requestId: string, model: string, startedAt: number) {
    this.#id = completionId(requestId);
    this.#model = model;
    this.#startedAt = startedAt;
  }

  /**
   * The chunks as events. With `withUsage` every chunk carries `usage` (null but on the
   * upstream's usage chunk), as OpenAI sends it; without, usage is removed and chunks that
   * carried nothing else (the usage chunk the gateway asked for on its own behalf) dropped.
   */
  async *events(chunks: AsyncIterable<Chunk>, withUsage: boolean): AsyncGenerator<string> {
    for await (const chunk of chunks) {
      if (!withUsage && !chunk.choices.length) continue;
      yield this.chunk(chunk, withUsage);
    }
  }

  chunk(chunk: Chunk, withUsage: boolean): string {
    const out = chunk as Record<string, unknown>;
    // Left out by setting it undefined, which JSON.stringify skips: a delete turns the object
    // into a slow dictionary (measured: 2.3 -> 1.55 µs to parse, stamp and write a chunk).
    out.usage = withUsage ? (chunk.usage ? openaiUsage(chunk.usage) : null) : undefined;
    // Azure's prompt-filter chunk says created: 0; only a real time dates the answer.
    this.#created ??= chunk.created || Math.floor(this.#startedAt / 1000);
    out.id = this.#id;
    out.object = "chat.completion.chunk";
    out.created = this.#created;
    out.model = this.#model;
    return JSON.stringify(out);
  }

  /** A chunk of the gateway's own (a finish or usage chunk), in the same answer. */
  event(fields: { choices: unknown[]; [extra: string]: unknown }): string {
    this.#created ??= Math.floor(this.#startedAt / 1000);
    return JSON.stringify({
      id: this.#id,
      object: "chat.completion.chunk",
      created: this.#created,
      model: this.#model,
      ...fields,
    });
  }
}
