// Stream stage of reviewed streaming: chunks are held until the text they carry has passed a
// review, then released together, a sentence or a bounded stretch at a time. Each review sees
// the held text with the tail of what was released before it. A flag ends the stage without
// releasing what was held; the caller ends the answer with `content_filter`.
import type { Chunk } from "../../providers/types.ts";
import type { ReviewOutcome } from "../../safety/policy.ts";
import { REVIEW_OVERLAP_CHARS, Segmenter } from "../../safety/segmenter.ts";
import { choiceText } from "../usage.ts";

export type ReviewText = (text: string) => Promise<ReviewOutcome>;

export class ReviewGate {
  readonly #review: ReviewText;
  readonly #segmenter: Segmenter;
  /** the verdict that closed the gate, if any */
  flagged: ReviewOutcome | undefined;

  constructor(review: ReviewText, segmentTokens: number) {
    this.#review = review;
    this.#segmenter = new Segmenter(segmentTokens);
  }

  async *pass(chunks: AsyncIterable<Chunk>): AsyncGenerator<Chunk> {
    let held: Chunk[] = [];
    let heldText = "";
    let releasedTail = "";
    /** reviews what is held; true when it passed (or held no text) */
    const passes = async (): Promise<boolean> => {
      if (!heldText.trim()) return true;
      const outcome = await this.#review(releasedTail + heldText);
      if (!outcome.flagged) return true;
      this.flagged = outcome;
      return false;
    };
    for await (const chunk of chunks) {
      held.push(chunk);
      for (const c of chunk.choices) heldText += choiceText(c.delta);
      if (!this.#segmenter.ready(heldText)) continue;
      if (!(await passes())) return;
      yield* held;
      held = [];
      releasedTail = (releasedTail + heldText).slice(-REVIEW_OVERLAP_CHARS);
      heldText = "";
    }
    // the rest of the output, once the upstream finished
    if (await passes()) yield* held;
  }
}
