// Local token counting (o200k_base via gpt-tokenizer, offline). Used to size reservations
// and to estimate usage when an upstream reports none; records say which source applied.
import { createRequire } from "node:module";

type Tokenizer = typeof import("gpt-tokenizer");
let loaded: Tokenizer | undefined;

/**
 * The tokenizer, loaded on first use: its vocabulary costs about 75 MB of memory, and most
 * gateways never estimate (upstreams report usage; reservations are byte bounds).
 */
export function tokenizer(): Tokenizer {
  loaded ??= createRequire(import.meta.url)("gpt-tokenizer") as Tokenizer;
  return loaded;
}

const countTokens: Tokenizer["countTokens"] = (text, options) => tokenizer().countTokens(text, options);

// Client text may contain special-token strings such as "<|endoftext|>"; they are plain
// text to us, and the tokenizer must not throw on them.
const PLAIN = { disallowedSpecial: new Set<string>() };

/** OpenAI's chat framing: each message costs a few tokens beyond its text, the reply 3. */
const PER_MESSAGE = 4;
const REPLY_PRIMING = 3;
/** a non-text part (image, audio, file) we cannot count: a fixed, generous guess */
const NON_TEXT_PART = 1_000;

/**
 * BPE merging is quadratic in the length of one pre-tokenized piece, and a run without
 * whitespace (a long word, base64, Chinese or Japanese prose) is one piece: 60 KB of "a"
 * took 4 s and 60 K CJK characters 16 s, on the event loop. Runs longer than this are
 * counted in slices of this length, which keeps every count linear in the text; a slice
 * boundary changes the count by about a token per slice.
 */
export const MAX_PIECE_CHARS = 256;
const LONG_RUN = new RegExp(`\\S{${MAX_PIECE_CHARS + 1},}`, "g");

export function countText(text: string): number {
  if (!text) return 0;
  if (text.length <= MAX_PIECE_CHARS) return countTokens(text, PLAIN);
  let total = 0;
  let from = 0;
  for (const run of text.matchAll(LONG_RUN)) {
    if (run.index > from) total += countTokens(text.slice(from, run.index), PLAIN);
    const end = run.index + run[0].length;
    for (let at = run.index; at < end; at += MAX_PIECE_CHARS)
      total += countTokens(text.slice(at, Math.min(at + MAX_PIECE_CHARS, end)), PLAIN);
    from = end;
  }
  if (from < text.length) total += countTokens(from ? text.slice(from) : text, PLAIN);
  return total;
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
  let total = REPLY_PRIMING;
  for (const m of messages) {
    const { text, nonText } = messageText(m.content);
    total += PER_MESSAGE + countText(text) + nonText * NON_TEXT_PART;
    if (typeof m.name === "string") total += countText(m.name);
    if (m.tool_calls) total += countText(JSON.stringify(m.tool_calls));
  }
  // tools and response_format schemas are sent to the model too
  if (extra) total += countText(JSON.stringify(extra));
  return total;
}

/** What to count: a prompt's messages (and the tools or schema sent with them), a text, or both. */
export interface CountJob {
  messages?: ReadonlyArray<Record<string, unknown>>;
  /** tools, functions or a response_format schema: read by the model as prompt */
  extra?: unknown;
  /** text the model wrote */
  text?: string;
}

export interface Counted {
  prompt: number;
  completion: number;
}

/** A job's counts, on the thread that calls it (src/tokens/estimator.ts runs it on a worker). */
export function countJob(job: CountJob): Counted {
  return {
    prompt: job.messages ? countPromptTokens(job.messages, job.extra) : 0,
    completion: countText(job.text ?? ""),
  };
}
