// Reviewed streaming releases model output in segments a reviewer has passed. A segment ends
// at the end of a sentence or line, or at the latest after about `segment_tokens` tokens, so
// a client sees text sentence by sentence while nothing unreviewed leaves.

/** Characters per token, for sizing segments without running the tokenizer on every chunk. */
const CHARS_PER_TOKEN = 4;
/** shorter stretches are not worth a review of their own, unless a line ends */
const MIN_SENTENCE_CHARS = 24;
/** how much of the released text the next review sees again, so a phrase split across two segments is still judged whole */
export const REVIEW_OVERLAP_CHARS = 200;

const SENTENCE_END = /(?:[.!?…。！？]["'”’)\]]?\s*|\n\s*)$/u;

export class Segmenter {
  readonly #maxChars: number;

  constructor(segmentTokens: number) {
    this.#maxChars = segmentTokens * CHARS_PER_TOKEN;
  }

  /** True when the held text should be reviewed and, if it passes, released now. */
  ready(held: string): boolean {
    if (held.length >= this.#maxChars) return true;
    // Only the tail can end a sentence; testing it alone keeps each chunk's check O(1).
    const tail = held.slice(-16);
    if (!SENTENCE_END.test(tail)) return false;
    return held.length >= MIN_SENTENCE_CHARS || /\n\s*$/.test(tail);
  }
}
