// Gemini's function calls have no ids; OpenAI's tool calls need them. The adapter makes one
// per call, and carries in it the call's `thoughtSignature`, which newer Gemini models attach
// to function calls and refuse the next turn without (400 "Function call is missing a
// thought_signature"). OpenAI clients keep a tool call's id and send it back with the tool
// call and its result, unchanged, so the signature comes back with them:
//
//   call_<16 hex: one per answer>_<n: the call's place in the answer>[_ts_<signature>]
//
// The signature is opaque: its characters are carried as base64url of their UTF-8, which ids
// take safely (no + / =) and which gives back exactly the string Gemini sent.
import { randomBytes } from "node:crypto";

const SIGNATURE_MARK = "_ts_";

/** The ids of one answer share a fresh prefix, so ids stay unique across a conversation's turns. */
export function answerPrefix(): string {
  return `call_${randomBytes(8).toString("hex")}`;
}

export function toolCallId(prefix: string, n: number, thoughtSignature: string | undefined): string {
  const id = `${prefix}_${n}`;
  return thoughtSignature
    ? `${id}${SIGNATURE_MARK}${Buffer.from(thoughtSignature).toString("base64url")}`
    : id;
}

/** The signature a tool-call id carries, as Gemini sent it; undefined for other ids. */
export function thoughtSignatureOf(id: string): string | undefined {
  const at = id.indexOf(SIGNATURE_MARK);
  if (at === -1) return undefined;
  const encoded = id.slice(at + SIGNATURE_MARK.length);
  return encoded ? Buffer.from(encoded, "base64url").toString("utf8") : undefined;
}
