// Stream stage of reviewed streaming: chunks are held until the text they carry has passed a
// review, then released together, a sentence or a bounded stretch at a time. Each review sees
// the held text with the tail of what was reviewed before it. A flag ends the stage without
// releasing what was held; the caller ends the answer with the gateway's notice.
//
// Tool calls are released whole: from the first chunk that carries one, nothing more is
// released until the upstream has finished and the rest has passed (it is still reviewed a
// stretch at a time, so a flag stops the upstream early). A client acts on a tool call (Claude
// Code runs the command, Codex applies the patch) and SDKs parse partial arguments leniently,
// so the released part of a call cut by a flag could run as a shorter, different command.
import type { Chunk } from "../../domain/completion.ts";
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
    /** the held text not reviewed yet */
    let heldText = "";
    let reviewedTail = "";
    /** a tool call began: everything is held to the end */
    let tools = false;
    /** reviews what is held; true when it passed (or held no text) */
    const passes = async (): Promise<boolean> => {
      if (!heldText.trim()) return true;
      const outcome = await this.#review(reviewedTail + heldText);
      if (!outcome.flagged) return true;
      this.flagged = outcome;
      return false;
    };
    for await (const chunk of chunks) {
      held.push(chunk);
      for (const c of chunk.choices) {
        heldText += choiceText(c.delta);
        tools ||= Array.isArray(c.delta.tool_calls) || c.delta.function_call !== undefined;
      }
      if (!this.#segmenter.ready(heldText)) continue;
      if (!(await passes())) return;
      reviewedTail = (reviewedTail + heldText).slice(-REVIEW_OVERLAP_CHARS);
      heldText = "";
      if (tools) continue;
      yield* held;
      held = [];
    }
    // the rest of the output, once the upstream finished
    if (await passes()) yield* held;
  }
}
