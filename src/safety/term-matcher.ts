// Term matching for the rules reviewer, on text normalised by ./normalize.ts, through whose
// steps the configured terms go too. Invisible runs reach the scanner as U+0000 marks.
//
// Terms are matched on words, not substrings: "ass" does not match "class assignment".
// A term matches a run of the text's letters and digits that starts where a word starts and
// ends where a word ends, and that crosses:
//   - any separators the term itself has ("card number" matches "card-number", "card   number"
//     and "cardnumber");
//   - separators between single letters, which is how words are spelled out ("b.o.m.b",
//     "b o m b", "b-o_m*b");
//   - invisible characters ("b\u200Bomb", "bo\u200Bmb"), which are also word boundaries;
//   - nothing else: "an al" does not match "anal", "a hole" does not match "ahole".
// Scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Burmese) have a word
// boundary between any two of their characters, so their terms match as substrings.
//
// For a given set of terms, the time is linear in the text: it is scanned once into letters and
// the kinds of gap between them, and all terms are found in one Aho-Corasick pass over the
// letters. Only a candidate ending on a word end is checked further, at a cost bounded by the
// number of separators in the term.
import { type NormalizedText, normalizeMarked, normalizeText } from "./normalize.ts";

/** What lies between two consecutive letters of the scanned text. */
const NONE = 0; // nothing: the same word
const SOFT = 1; // a boundary a term may start or end at, and may also cross
const HARD = 2; // a boundary a term may start or end at, and cross only where it has a separator itself

// ---------------------------------------------------------------------------------------------
// Character classes, cached per code point (the scanner sees each character of long texts)
// ---------------------------------------------------------------------------------------------

const WORD_CHAR = 1;
const UNSPACED = 2;
const KNOWN = 4;
const WORD_CHAR_RE = /^[\p{L}\p{N}\p{M}]$/u;
/** Scripts written without spaces between words. */
const UNSPACED_RE =
  /^[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Thai}\p{sc=Lao}\p{sc=Khmer}\p{sc=Myanmar}]$/u;
let classes: Uint8Array | undefined;

function classOf(cp: number): number {
  if (cp < 128) {
    // a-z, 0-9 (and A-Z, which normalisation has already lowered)
    return (cp >= 97 && cp <= 122) || (cp >= 48 && cp <= 57) || (cp >= 65 && cp <= 90) ? WORD_CHAR : 0;
  }
  classes ??= new Uint8Array(0x110000);
  let c = classes[cp]!;
  if (c === 0) {
    const ch = String.fromCodePoint(cp);
    c = KNOWN | (WORD_CHAR_RE.test(ch) ? WORD_CHAR : 0) | (UNSPACED_RE.test(ch) ? UNSPACED : 0);
    classes[cp] = c;
  }
  return c;
}

function isUnspaced(cp: number): boolean {
  return cp >= 128 && (classOf(cp) & UNSPACED) !== 0;
}

// ---------------------------------------------------------------------------------------------
// Scanning
// ---------------------------------------------------------------------------------------------

interface ScannedText {
  /** the letters and digits (code points), in order */
  cps: Int32Array;
  /** gaps[i]: what lies between letter i-1 and letter i (NONE, SOFT or HARD) */
  gaps: Uint8Array;
  /** nextHard[i]: the first j >= i with a HARD gap, or `length` */
  nextHard: Int32Array;
  length: number;
}

/**
 * The text's letters and the gaps between them. A separator between two single letters is
 * SOFT (spelled out), between longer words HARD; invisibles alone make a SOFT gap; adjacent
 * letters of unspaced scripts are SOFT too.
 */
function scanText(s: string): ScannedText {
  const cps = new Int32Array(s.length);
  const gaps = new Uint8Array(s.length);
  let n = 0;
  /** since the last letter: 0 nothing, 1 only invisibles, 2 a separator */
  let between = 0;
  /** letters of the current segment (a run not interrupted by separators or invisibles) */
  let segment = 0;
  /** the current segment's first letter, when a separator precedes it: its gap waits for the segment's length */
  let pending = -1;
  let pendingBefore = 0;
  const settle = () => {
    if (pending < 0) return;
    const spelled = pendingBefore === 1 && segment === 1;
    gaps[pending] = spelled || isUnspaced(cps[pending - 1]!) || isUnspaced(cps[pending]!) ? SOFT : HARD;
    pending = -1;
  };
  for (let i = 0; i < s.length; ) {
    const cp = s.codePointAt(i)!;
    i += cp > 0xffff ? 2 : 1;
    if (cp === 0) {
      if (between === 0) between = 1;
      continue;
    }
    if ((classOf(cp) & WORD_CHAR) === 0) {
      between = 2;
      continue;
    }
    cps[n] = cp;
    if (n === 0) {
      gaps[0] = HARD;
      segment = 1;
    } else if (between === 0) {
      gaps[n] = isUnspaced(cps[n - 1]!) || isUnspaced(cp) ? SOFT : NONE;
      segment++;
    } else {
      settle();
      if (between === 1) gaps[n] = SOFT;
      else {
        pending = n;
        pendingBefore = segment;
      }
      segment = 1;
    }
    between = 0;
    n++;
  }
  settle();
  const nextHard = new Int32Array(n + 1);
  nextHard[n] = n;
  for (let i = n - 1; i >= 0; i--) nextHard[i] = gaps[i] === HARD && i > 0 ? i : nextHard[i + 1]!;
  return { cps, gaps, nextHard, length: n };
}

/** A term's letters and where it has separators (offsets of the letters they precede). */
function scanTerm(s: string): { cps: number[]; spaces: Set<number> } {
  const cps: number[] = [];
  const spaces = new Set<number>();
  let separated = false;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0) continue; // invisibles inside a term are just removed
    if ((classOf(cp) & WORD_CHAR) === 0) {
      separated = true;
      continue;
    }
    if (separated && cps.length > 0) spaces.add(cps.length);
    separated = false;
    cps.push(cp);
  }
  return { cps, spaces };
}

// ---------------------------------------------------------------------------------------------
// Matching
// ---------------------------------------------------------------------------------------------

interface Pattern {
  /** the configured term, as written */
  term: string;
  length: number;
  /** each way the term's words may be separated: the offsets where the term has a separator */
  variants: Set<number>[];
}

/**
 * All configured terms, compiled once. Terms with letters or digits are matched on words as
 * described at the top of this file; a term of symbols only (an emoji, say) is matched as a
 * plain substring of the normalised text.
 */
export class TermMatcher {
  /** Aho-Corasick automaton over code points: goto, failure and dictionary-suffix links */
  readonly #next: Map<number, number>[] = [new Map()];
  readonly #fail: number[] = [0];
  readonly #output: number[] = [-1];
  readonly #dict: number[] = [0];
  readonly #patterns: Pattern[] = [];
  readonly #symbols: { term: string; text: string }[] = [];

  constructor(terms: readonly string[]) {
    const byKey = new Map<string, Pattern>();
    for (const term of terms) {
      const plain = scanTerm(normalizeMarked(term));
      if (plain.cps.length === 0) {
        const text = normalizeText(term).trim();
        if (!text) throw new Error(`the term ${JSON.stringify(term)} is empty once normalised`);
        this.#symbols.push({ term, text });
        continue;
      }
      const forms = [plain];
      const lookalike = scanTerm(normalizeMarked(term, true));
      if (String.fromCodePoint(...lookalike.cps) !== String.fromCodePoint(...plain.cps))
        forms.push(lookalike);
      for (const form of forms) {
        const key = String.fromCodePoint(...form.cps);
        let pattern = byKey.get(key);
        if (!pattern) {
          pattern = { term, length: form.cps.length, variants: [] };
          byKey.set(key, pattern);
          this.#add(form.cps, this.#patterns.length);
          this.#patterns.push(pattern);
        }
        pattern.variants.push(form.spaces);
      }
    }
    this.#link();
  }

  get size(): number {
    return this.#patterns.length + this.#symbols.length;
  }

  #add(cps: number[], index: number): void {
    let node = 0;
    for (const cp of cps) {
      let child = this.#next[node]!.get(cp);
      if (child === undefined) {
        child = this.#next.length;
        this.#next.push(new Map());
        this.#fail.push(0);
        this.#output.push(-1);
        this.#dict.push(0);
        this.#next[node]!.set(cp, child);
      }
      node = child;
    }
    this.#output[node] = index;
  }

  /** Failure links breadth first; dict[n] is the nearest node on n's failure chain that ends a term. */
  #link(): void {
    const queue: number[] = [];
    for (const child of this.#next[0]!.values()) queue.push(child);
    for (let head = 0; head < queue.length; head++) {
      const node = queue[head]!;
      for (const [cp, child] of this.#next[node]!) {
        let f = this.#fail[node]!;
        while (f !== 0 && !this.#next[f]!.has(cp)) f = this.#fail[f]!;
        const target = this.#next[f]!.get(cp);
        const fail = target !== undefined && target !== child ? target : 0;
        this.#fail[child] = fail;
        this.#dict[child] = this.#output[fail]! >= 0 ? fail : this.#dict[fail]!;
        queue.push(child);
      }
    }
  }

  /** The first configured term found in the text, or undefined. */
  find(text: NormalizedText): string | undefined {
    for (const symbol of this.#symbols) if (text.text.includes(symbol.text)) return symbol.term;
    if (this.#patterns.length === 0) return undefined;
    const { cps, gaps, nextHard, length } = scanText(text.marked);
    let state = 0;
    for (let end = 0; end < length; end++) {
      const cp = cps[end]!;
      let target = this.#next[state]!.get(cp);
      while (target === undefined && state !== 0) {
        state = this.#fail[state]!;
        target = this.#next[state]!.get(cp);
      }
      state = target ?? 0;
      // A term ends where a word ends; most positions are inside words and cost nothing more.
      if (end + 1 < length && gaps[end + 1] === NONE) continue;
      for (
        let node = this.#output[state]! >= 0 ? state : this.#dict[state]!;
        node !== 0;
        node = this.#dict[node]!
      ) {
        const pattern = this.#patterns[this.#output[node]!]!;
        const start = end - pattern.length + 1;
        if (start > 0 && gaps[start] === NONE) continue;
        if (crossesOnlyAllowed(nextHard, start, end, pattern.variants)) return pattern.term;
      }
    }
    return undefined;
  }
}

/**
 * Every HARD gap inside [start, end] must fall where one of the term's forms has a separator.
 * Jumps from HARD gap to HARD gap, so the cost is bounded by the term's separators, not its length.
 */
function crossesOnlyAllowed(
  nextHard: Int32Array,
  start: number,
  end: number,
  variants: Set<number>[],
): boolean {
  for (const spaces of variants) {
    let ok = true;
    for (let i = nextHard[start + 1]!; i <= end; i = nextHard[i + 1]!) {
      if (!spaces.has(i - start)) {
        ok = false;
        break;
      }
    }
    if (ok) return true;
  }
  return false;
}
