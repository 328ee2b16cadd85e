// OpenAI's embeddings request as Gemini's embedContent (one input) or batchEmbedContents
// (several), and their vectors back in input order. Gemini embeds text only, answers floats
// only (the edge encodes base64 itself) and counts nothing: the relay counts the inputs
// locally and records the usage as estimated.
import { UpstreamError } from "../../errors/upstream-error.ts";
import { isObject } from "../openai-compatible/wire.ts";

/** The most requests one batchEmbedContents takes; more inputs go as several batches. */
export const MAX_BATCH = 100;

/** One EmbedContentRequest: `model` is needed inside a batch, and refused by nothing outside one. */
export function embedContentRequest(
  text: string,
  dimensions: number | undefined,
  model?: string,
): Record<string, unknown> {
  return {
    ...(model === undefined ? {} : { model: `models/${model}` }),
    content: { parts: [{ text }] },
    ...(dimensions === undefined ? {} : { outputDimensionality: dimensions }),
  };
}

const malformed = (why: string) => new UpstreamError("malformed", `the upstream's embeddings ${why}`);

function values(embedding: unknown): number[] {
  const v = isObject(embedding) ? embedding.values : undefined;
  if (!Array.isArray(v) || !v.every((x) => typeof x === "number"))
    throw malformed("reply holds an embedding without numeric values");
  return v as number[];
}

/** embedContent's `{embedding: {values}}`. */
export function readEmbedContent(raw: unknown): number[] {
  if (!isObject(raw)) throw malformed("reply is not an object");
  return values(raw.embedding);
}

/** batchEmbedContents' `{embeddings: [{values}]}`, one per request sent, in their order. */
export function readBatch(raw: unknown, sent: number): number[][] {
  const list = isObject(raw) ? raw.embeddings : undefined;
  if (!Array.isArray(list)) throw malformed("reply is not a list of embeddings");
  if (list.length !== sent) throw malformed(`reply has ${list.length} vectors for ${sent} inputs`);
  return list.map(values);
}
