// OpenAI's o200k_base byte-pair encoding, kept compact: the 199,998 tokens' bytes in one
// buffer and their ranks in one open-addressed table, about 4 MB, read from the vocabulary
// file gpt-tokenizer ships (OpenAI's own `.tiktoken` format: a token's bytes in base64 and
// its rank, a line each). gpt-tokenizer's JavaScript held the same vocabulary as 200,000
// strings in Maps, with a merge cache of 100,000 more: its worker kept about 70 MB of heap
// and grew V8's young generation to its limit while loading (decision 0038).
// The pieces and merges are tiktoken's: the pre-tokenizer's pattern splits the text, a piece
// that is a token is one, and any other is merged pair by pair, the lowest rank first.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

/** o200k_base's pre-tokenizer (tiktoken's pattern; `\p{…}` classes need the `u` flag). */
const CONTRACTION = "(?:'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE]))?";
const SPLIT = new RegExp(
  [
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+${CONTRACTION}`,
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*${CONTRACTION}`,
    String.raw`\p{N}{1,3}`,
    String.raw` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
    String.raw`\s*[\r\n]+`,
    String.raw`\s+(?!\S)`,
    String.raw`\s+`,
  ].join("|"),
  "gu",
);

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function hash(bytes: Uint8Array, from: number, to: number): number {
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
  return h >>> 0;
}

const BASE64 = new Int8Array(128).fill(-1);
for (const [i, c] of [..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"].entries())
  BASE64[c.charCodeAt(0)] = i;

/** The vocabulary: every token's bytes, and the rank of a byte string. */
export class Vocabulary {
  /** token `r`'s bytes are bytes[offsets[r]] .. bytes[offsets[r + 1]] */
  readonly #bytes: Uint8Array;
  readonly #offsets: Uint32Array;
  /** open addressing, linear probing: rank + 1, 0 for an empty slot */
  readonly #slots: Int32Array;
  readonly #mask: number;

  /** Reads a `.tiktoken` file: `<base64 bytes> <rank>` a line, ranks 0, 1, 2, … in order. */
  constructor(file: Uint8Array) {
    let lines = 0;
    for (const b of file) if (b === 0x0a) lines++;
    if (file.length && file[file.length - 1] !== 0x0a) lines++;
    const bytes = new Uint8Array(Math.ceil((file.length * 3) / 4));
    const offsets = new Uint32Array(lines + 1);
    let size = 1;
    while (size < lines * 2) size <<= 1;
    const slots = new Int32Array(size);
    const mask = size - 1;
    let written = 0;
    let rank = 0;
    let at = 0;
    while (at < file.length) {
      // base64 up to the space, then the rank, then the line's end
      let bits = 0;
      let held = 0;
      const start = written;
      for (; at < file.length && file[at] !== 0x20; at++) {
        const c = file[at]!;
        if (c === 0x3d) continue; // '=' padding
        const v = c < 128 ? BASE64[c]! : -1;
        if (v < 0) throw new Error(`o200k vocabulary: not base64 at byte ${at}`);
        bits = (bits << 6) | v;
        held += 6;
        if (held >= 8) {
          held -= 8;
          bytes[written++] = (bits >> held) & 0xff;
        }
      }
      let given = 0;
      for (at++; at < file.length && file[at] !== 0x0a; at++) given = given * 10 + (file[at]! - 0x30);
      at++;
      if (given !== rank) throw new Error(`o200k vocabulary: rank ${given} where ${rank} was due`);
      offsets[rank] = start;
      let slot = hash(bytes, start, written) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = rank + 1;
      rank++;
    }
    offsets[rank] = written;
    this.#bytes = bytes.slice(0, written);
    this.#offsets = offsets.slice(0, rank + 1);
    this.#slots = slots;
    this.#mask = mask;
  }

  get size(): number {
    return this.#offsets.length - 1;
  }

  /** The rank of bytes[from..to), or -1 when they are no token. */
  rank(bytes: Uint8Array, from: number, to: number): number {
    const own = this.#bytes;
    const offsets = this.#offsets;
    const length = to - from;
    for (let slot = hash(bytes, from, to) & this.#mask; ; slot = (slot + 1) & this.#mask) {
      const entry = this.#slots[slot]!;
      if (entry === 0) return -1;
      const r = entry - 1;
      const start = offsets[r]!;
      if (offsets[r + 1]! - start !== length) continue;
      let i = 0;
      while (i < length && own[start + i] === bytes[from + i]) i++;
      if (i === length) return r;
    }
  }

  /** Token `rank`'s bytes. */
  bytes(rank: number): Uint8Array {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.size) throw new RangeError(`no token ${rank}`);
    return this.#bytes.subarray(this.#offsets[rank]!, this.#offsets[rank + 1]!);
  }
}

const utf8 = new TextEncoder();
const text = new TextDecoder();

/** The o200k_base encoder: counts, encodes and decodes text, with no special tokens (they are text). */
export class Encoder {
  readonly #vocabulary: Vocabulary;
  /** a piece's UTF-8 bytes, and the merge's state; grown for a longer piece */
  #piece = new Uint8Array(1024);
  #starts = new Int32Array(1025);
  #ranks = new Int32Array(1025);

  constructor(vocabulary: Vocabulary) {
    this.#vocabulary = vocabulary;
  }

  /** How many tokens `input` is. */
  count(input: string): number {
    let n = 0;
    for (const [piece] of input.matchAll(SPLIT)) n += this.#merge(piece);
    return n;
  }

  encode(input: string): number[] {
    const tokens: number[] = [];
    for (const [piece] of input.matchAll(SPLIT)) {
      const parts = this.#merge(piece);
      const bytes = this.#piece;
      for (let i = 0; i < parts; i++)
        tokens.push(this.#vocabulary.rank(bytes, this.#starts[i]!, this.#starts[i + 1]!));
    }
    return tokens;
  }

  decode(tokens: readonly number[]): string {
    const parts = tokens.map((t) => this.#vocabulary.bytes(t));
    const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    return text.decode(all);
  }

  /**
   * Merges one piece: the number of tokens it makes, their bounds left in #starts. Quadratic
   * in the piece's bytes, as tiktoken's is; count.ts keeps pieces short.
   */
  #merge(piece: string): number {
    if (this.#piece.length < piece.length * 3) {
      const size = piece.length * 3;
      this.#piece = new Uint8Array(size);
      this.#starts = new Int32Array(size + 1);
      this.#ranks = new Int32Array(size + 1);
    }
    const bytes = this.#piece;
    const n = utf8.encodeInto(piece, bytes).written;
    const starts = this.#starts;
    const vocabulary = this.#vocabulary;
    starts[0] = 0;
    starts[1] = n;
    if (vocabulary.rank(bytes, 0, n) >= 0) return 1;
    const ranks = this.#ranks;
    // parts are bytes[starts[i]..starts[i+1]); ranks[i] is the rank of parts i and i+1 together
    for (let i = 0; i <= n; i++) starts[i] = i;
    for (let i = 0; i < n - 1; i++) ranks[i] = vocabulary.rank(bytes, i, i + 2);
    let parts = n;
    const pairRank = (i: number) => (i + 1 < parts ? vocabulary.rank(bytes, starts[i]!, starts[i + 2]!) : -1);
    for (;;) {
      let lowest = -1;
      let at = -1;
      for (let i = 0; i < parts - 1; i++) {
        const r = ranks[i]!;
        if (r >= 0 && (lowest < 0 || r < lowest)) {
          lowest = r;
          at = i;
        }
      }
      if (at < 0) break;
      // part at+1 joins part at
      starts.copyWithin(at + 1, at + 2, parts + 1);
      ranks.copyWithin(at + 1, at + 2, parts - 1);
      parts--;
      ranks[at] = pairRank(at);
      if (at > 0) ranks[at - 1] = pairRank(at - 1);
    }
    return parts;
  }
}

let loaded: Encoder | undefined;

/** The process's (or worker's) encoder, loaded on first use: about 40 ms and 4 MB. */
export function o200k(): Encoder {
  if (!loaded) {
    const file = createRequire(import.meta.url).resolve("gpt-tokenizer/data/o200k_base.tiktoken");
    loaded = new Encoder(new Vocabulary(readFileSync(file)));
  }
  return loaded;
}
