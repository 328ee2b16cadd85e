// Stream stage: notes what passes through (the text of every choice, the choices seen, the
// usage the upstream reported) so the call can be charged and ended whatever happens next.
import type { Chunk, Usage } from "../../providers/types.ts";
import { choiceText } from "../usage.ts";

export class Meter {
  /** every text the upstream produced so far, all choices together */
  text = "";
  /** the choice indexes seen */
  readonly choices = new Set<number>();
  /** the last usage the upstream reported (streams report it once, at the end) */
  usage: Usage | undefined;

  /** Notes one chunk. */
  note(chunk: Chunk): void {
    if (chunk.usage) this.usage = chunk.usage;
    for (const c of chunk.choices) {
      this.choices.add(c.index);
      this.text += choiceText(c.delta);
    }
  }

  /** Passes the chunks through unchanged, noting each. */
  async *pass(chunks: AsyncIterable<Chunk>): AsyncGenerator<Chunk> {
    for await (const chunk of chunks) {
      this.note(chunk);
      yield chunk;
    }
  }
}
