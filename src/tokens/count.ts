// Local token counting (o200k_base, offline: src/tokens/o200k.ts). Used to size reservations
// and to estimate usage when an upstream reports none; records say which source applied.
// Client text may contain special-token strings such as "<|endoftext|>"; they are plain
// text to us, as o200k.ts encodes them.
import { o200k } from "./o200k.ts";

/** OpenAI's chat framing: each message costs a few tokens beyond its text, the reply 3. */
const PER_MESSAGE = 4;
const REPLY_PRIMING = 3;
/** a non-text part (image, audio, file) we cannot count: a fixed, generous guess */
const NON_TEXT_PART = 1_000;

/**
 * BPE merging is quadratic in the length of one pre-tokenized piece, and the pre-tokenizer's
 * pattern takes a whole run of one kind as one piece: a run without whitespace (a long word,
 * base64, Chinese or Japanese prose, emoji, punctuation) or a run of whitespace (newlines,
 * spaces, no-break spaces). 60 KB of "a" took 4 s, 150,000 newlines 8.9 s and 100,000 U+00A0
 * 14.7 s. A run of either kind longer than this is counted in slices of this length, so no
 * piece is longer than two slices and every count is linear in the text; a slice boundary
 * changes the count by about a token per slice.
 */
export const MAX_PIECE_CHARS = 256;
/**
 * A count is made in segments of at most this many characters, one step each: the worker
 * (src/tokens/estimator.ts) can stop between two, so a long count takes its turns with the
 * others and is dropped when its caller leaves. Cut where the pre-tokenizer cuts too, the
 * segments count what the whole text does.
 */
export const SEGMENT_CHARS = 2_048;

/** The characters of the pre-tokenizer's `\s` (JavaScript's), by UTF-16 code unit. */
export function isSpace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** `at`, or the index before it where `at` would split a surrogate pair. */
function codePointCut(text: string, at: number): number {
  return isLow(text.charCodeAt(at)) && isHigh(text.charCodeAt(at - 1)) ? at - 1 : at;
}

/** a letter, mark or digit, then whitespace: the pre-tokenizer ends a piece between the two */
const WORD_THEN_SPACE = /[\p{L}\p{M}\p{N}]\s/uy;

/**
 * The last index in (`from`, `to`] at which the pre-tokenizer cuts whatever follows: whitespace
 * after a letter, mark or digit (no piece holds both, and what a piece takes after them is
 * never whitespace); -1 when there is none.
 */
function wordEnd(text: string, from: number, to: number): number {
  for (let at = to; at > from; at--) {
    if (!isSpace(text.charCodeAt(at)) || isSpace(text.charCodeAt(at - 1))) continue;
    WORD_THEN_SPACE.lastIndex = isLow(text.charCodeAt(at - 1)) && at - 2 >= 0 ? at - 2 : at - 1;
    if (WORD_THEN_SPACE.test(text)) return at;
  }
  return -1;
}

/**
 * The text in consecutive segments, each counted on its own: at most SEGMENT_CHARS long (cut
 * at a word's end where the last half of the segment has one), and no run of whitespace or
 * of anything else longer than MAX_PIECE_CHARS. One pass, linear in the text.
 */
export function* segments(text: string): Generator<string, void, undefined> {
  const n = text.length;
  let start = 0;
  if (n > MAX_PIECE_CHARS) {
    let runStart = 0;
    let runSpace = isSpace(text.charCodeAt(0));
    for (let i = 1; i < n; i++) {
      const space = isSpace(text.charCodeAt(i));
      let cut = -1;
      if (space !== runSpace) {
        runSpace = space;
        runStart = i;
      } else if (i - runStart >= MAX_PIECE_CHARS) cut = codePointCut(text, i);
      if (cut < 0 && i - start >= SEGMENT_CHARS) {
        cut = wordEnd(text, start + SEGMENT_CHARS / 2, i);
        if (cut < 0) cut = codePointCut(text, i);
      }
      if (cut < 0) continue;
      yield text.slice(start, cut);
      start = cut;
      if (runStart < cut) runStart = cut;
    }
  }
  if (start < n) yield start ? text.slice(start) : text;
}

/** A text's count, a step per segment. */
function* textSteps(text: string): Generator<void, number, undefined> {
  // JSON.stringify gives undefined for a value JSON has no form of
  if (!text) return 0;
  let total = 0;
  for (const segment of segments(text)) {
    total += o200k().count(segment);
    yield;
  }
  return total;
}

export function countText(text: string): number {
  return run(textSteps(text));
}

/** All the text a message carries, for counting and for the reviewers. */
export function messageText(content: unknown): { text: string; nonText: number } {
  if (typeof content === "string") return { text: content, nonText: 0 };
  if (!Array.isArray(content)) return { text: "", nonText: 0 };
  let text = "";
  let nonText = 0;
  for (const part of content) {
    if (part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string")
      text += `${(part as { text: string }).text}\n`;
    else nonText++;
  }
  return { text, nonText };
}

export function countPromptTokens(messages: ReadonlyArray<Record<string, unknown>>, extra?: unknown): number {
  return run(countSteps({ messages, extra })).prompt;
}

/** What to count: a prompt's messages (and the tools or schema sent with them), a text, or both. */
export interface CountJob {
  messages?: ReadonlyArray<Record<string, unknown>>;
  /** tools, functions or a response_format schema: read by the model as prompt */
  extra?: unknown;
  /** text the model wrote */
  text?: string;
  /** an embeddings request's inputs, counted as prompt: each text, or its token ids as given */
  inputs?: ReadonlyArray<string | readonly number[]>;
}

export interface Counted {
  prompt: number;
  completion: number;
}

/** A job's counts, on the thread that calls it (src/tokens/estimator.ts runs it on a worker). */
export function countJob(job: CountJob): Counted {
  return run(countSteps(job));
}

/**
 * A job's count in steps of a segment each (at most SEGMENT_CHARS of text), for a thread that
 * counts several jobs by turns and drops those no longer wanted (src/tokens/estimator.ts).
 */
export function* countSteps(job: CountJob): Generator<void, Counted, undefined> {
  let prompt = 0;
  if (job.messages) {
    prompt = REPLY_PRIMING;
    for (const m of job.messages) {
      const { text, nonText } = messageText(m.content);
      prompt += PER_MESSAGE + (yield* textSteps(text)) + nonText * NON_TEXT_PART;
      if (typeof m.name === "string") prompt += yield* textSteps(m.name);
      if (m.tool_calls) prompt += yield* textSteps(JSON.stringify(m.tool_calls));
    }
    // tools and response_format schemas are sent to the model too
    if (job.extra) prompt += yield* textSteps(JSON.stringify(job.extra));
  }
  // each input on its own: an embedding model reads them apart, so no token spans two
  for (const input of job.inputs ?? [])
    prompt += typeof input === "string" ? yield* textSteps(input) : input.length;
  return { prompt, completion: yield* textSteps(job.text ?? "") };
}

/** Runs `steps` for about `ms` milliseconds: the count when it is done, else undefined. */
export function advance<T>(steps: Generator<void, T, undefined>, ms: number): T | undefined {
  const until = performance.now() + ms;
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() >= until) return undefined;
  }
}

function run<T>(steps: Generator<void, T, undefined>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

const utf8 = (text: string) => Buffer.byteLength(text, "utf8");

/**
 * An upper bound of the job's counts, from UTF-8 bytes (every token is at least one byte, a
 * slice's too), for an estimate the worker has no room for: linear, native, no tokenizer.
 */
export function boundJob(job: CountJob): Counted {
  let prompt = 0;
  if (job.messages) {
    prompt = REPLY_PRIMING;
    for (const m of job.messages) {
      const { text, nonText } = messageText(m.content);
      prompt += PER_MESSAGE + utf8(text) + nonText * NON_TEXT_PART;
      if (typeof m.name === "string") prompt += utf8(m.name);
      if (m.tool_calls) prompt += utf8(JSON.stringify(m.tool_calls));
    }
    if (job.extra) prompt += utf8(JSON.stringify(job.extra));
  }
  for (const input of job.inputs ?? []) prompt += typeof input === "string" ? utf8(input) : input.length;
  return { prompt, completion: utf8(job.text ?? "") };
}
