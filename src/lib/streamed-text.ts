// Text a stream builds a delta at a time, kept at the size of its characters. `text += delta`
// makes a rope: V8 links the two strings with a 32-byte node and keeps the delta's own string
// (24-40 bytes) under it, so a text streamed a word (6 characters) an event held 5-10 times
// its size for as long as it lived: 20 streaming clients that read nothing held 25-36 MB of
// such ropes (docs/decisions/0024-hardening-after-the-second-audit.md, "Streams to clients
// that do not read"). Here the pieces are joined into a flat string every PIECES pieces: a
// text costs its characters, and at most PIECES pieces more.

/** pieces joined at a time: the most a text holds besides its characters */
const PIECES = 256;

/** A text appended to piece by piece and read whole (a Responses item's text, a tool call's arguments). */
export class FlatText {
  /** flat strings of PIECES pieces each, joined once when read */
  #blocks: string[] = [];
  #pieces: string[] = [];
  length = 0;

  add(piece: string): void {
    if (!piece) return;
    this.length += piece.length;
    this.#pieces.push(piece);
    if (this.#pieces.length === PIECES) {
      this.#blocks.push(this.#pieces.join(""));
      this.#pieces = [];
    }
  }

  toString(): string {
    if (this.#pieces.length) {
      this.#blocks.push(this.#pieces.join(""));
      this.#pieces = [];
    }
    if (this.#blocks.length > 1) this.#blocks = [this.#blocks.join("")];
    return this.#blocks[0] ?? "";
  }
}

/** characters of one block of a sample */
export const BLOCK_CHARS = 4096;
/** blocks a sample keeps: a text up to 64 K characters (about 16 K tokens) is kept whole */
export const SAMPLE_BLOCKS = 16;

/**
 * The text of a stream's output for its local count (the estimate of an answer whose upstream
 * reported no usage, or that was cut before it did), in bounded memory: whole up to
 * SAMPLE_BLOCKS blocks of BLOCK_CHARS, and beyond that every other block of what it kept, then
 * every fourth, …: evenly spaced blocks of the whole, whose count `scale` times estimates the
 * whole's. A stream's memory no longer grows with its answer (a client that reads nothing
 * lets the kernel's socket buffers take megabytes of events before the upstream stalls).
 */
export class TextSample {
  /** the length of all the text added */
  length = 0;
  /** blocks kept: those whose index is a multiple of #stride */
  #kept: string[] = [];
  #keptLength = 0;
  /** the block being filled (its pieces, when it is kept), its index and length */
  #block = new FlatText();
  #blockLength = 0;
  #index = 0;
  #stride = 1;

  add(piece: string): void {
    if (!piece) return;
    this.length += piece.length;
    this.#blockLength += piece.length;
    if (this.#index % this.#stride === 0) this.#block.add(piece);
    if (this.#blockLength < BLOCK_CHARS) return;
    if (this.#index % this.#stride === 0) {
      const block = this.#block.toString();
      this.#kept.push(block);
      this.#keptLength += block.length;
      this.#block = new FlatText();
    }
    this.#blockLength = 0;
    this.#index++;
    if (this.#kept.length > SAMPLE_BLOCKS) {
      // the kept blocks' indexes are 0, s, 2s, …: those at even positions are the multiples of 2s
      this.#kept = this.#kept.filter((_, i) => i % 2 === 0);
      this.#keptLength = this.#kept.reduce((sum, block) => sum + block.length, 0);
      this.#stride *= 2;
    }
  }

  /** The text kept, and what its count is multiplied by to count all of it (1: it is all of it). */
  sample(): { text: string; scale: number } {
    const partial = this.#index % this.#stride === 0 ? this.#block.toString() : "";
    const text = this.#kept.length ? this.#kept.join("") + partial : partial;
    return { text, scale: text.length && this.length > text.length ? this.length / text.length : 1 };
  }
}
