// Stream stage: notes what passes through (the text of every choice, the choices seen, the
// usage the upstream reported) so the call can be charged and ended whatever happens next.
// What it keeps of the text is bounded (./text.ts): a stream's memory does not grow with its
// answer.
import type { Chunk, Usage } from "../../domain/completion.ts";
import { TextSample } from "../../lib/streamed-text.ts";
import { choiceText } from "../usage.ts";

export class Meter {
  /** the text the upstream produced so far, all choices together: whole, or a sample of a long one */
  readonly output = new TextSample();
  /** the choice indexes seen */
  readonly choices = new Set<number>();
  /** the last usage the upstream reported (streams report it once, at the end; some on every chunk) */
  usage: Usage | undefined;
  /** usage the upstream reported before its final figures (Anthropic's message_start) */
  usageSoFar: Usage | undefined;
  /** the upstream's stream came to its end: `usage`, if any, is its final figure */
  ended = false;

  /** Notes one chunk. */
  note(chunk: Chunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    if (chunk.usageSoFar) {
      this.usageSoFar = chunk.usageSoFar;
      // the relay's own: no client is shown it (undefined, not delete: see chunk-stamp.ts)
      chunk.usageSoFar = undefined;
    }
    for (const c of chunk.choices) {
      this.choices.add(c.index);
      this.output.add(choiceText(c.delta));
    }
  }

  /** whether the upstream produced any text */
  get produced(): boolean {
    return this.output.length > 0;
  }

  /** What the upstream reported last: its latest usage chunk, else its early figures. */
  get reported(): Usage | undefined {
    return this.usage ?? this.usageSoFar;
  }

  /** Passes the chunks through unchanged, noting each. */
  async *pass(chunks: AsyncIterable<Chunk>): AsyncGenerator<Chunk> {
    for await (const chunk of chunks) {
      this.note(chunk);
      yield chunk;
    }
    this.ended = true;
  }
}
