// OpenAI's embeddings API (POST {base_url}/embeddings) as OpenAI-shaped upstreams speak it,
// Azure OpenAI's included: the client's request goes as it came (the input in its own shape, so
// the upstream counts what the client sent; `encoding_format` passed on, so a base64 answer
// stays base64 all the way), with the deployment's model; the answer read back in input order.
import { UpstreamError } from "../../errors/upstream-error.ts";
import { embeddingExtras, type PassthroughSettings } from "../passthrough.ts";
import type { EmbeddingCall, EmbeddingResult } from "../types.ts";
import { isObject } from "./wire.ts";

/** The upstream's body: the client's fields, the ones the gateway does not read included, but for what the provider denies. */
export function embeddingsBody(
  call: EmbeddingCall,
  passthrough: PassthroughSettings,
  provider: string,
): Record<string, unknown> {
  const { request } = call;
  const body = embeddingExtras(call, provider, passthrough, true);
  body.model = call.upstreamModel;
  body.input = request.input;
  if (request.dimensions !== undefined) body.dimensions = request.dimensions;
  if (request.encoding_format !== undefined) body.encoding_format = request.encoding_format;
  if (request.user !== undefined) body.user = request.user;
  return body;
}

/** Base64 of whole float32s, so the edge can decode it for a client that wants floats. */
function wholeFloats(encoded: string): boolean {
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return false;
  const padding = encoded.endsWith("==") ? 2 : encoded.endsWith("=") ? 1 : 0;
  return ((encoded.length / 4) * 3 - padding) % 4 === 0;
}

const malformed = (why: string) => new UpstreamError("malformed", `the upstream's embeddings ${why}`);

/**
 * OpenAI's `{object: "list", data: [{index, embedding}], usage}`, read strictly where the
 * answer depends on it: one vector per input, each index once, each vector an array of
 * numbers or a base64 string. A usage without a count of prompt tokens is no usage.
 */
export function readEmbeddings(raw: unknown, inputs: number): EmbeddingResult {
  if (!isObject(raw) || !Array.isArray(raw.data)) throw malformed("reply is not a list of embeddings");
  if (raw.data.length !== inputs)
    throw malformed(`reply has ${raw.data.length} vectors for ${inputs} inputs`);
  const vectors = new Array<readonly number[] | string>(inputs);
  for (const item of raw.data) {
    if (!isObject(item)) throw malformed("reply holds an entry that is not an object");
    const { index, embedding } = item;
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= inputs)
      throw malformed("reply holds an entry without a valid index");
    if (vectors[index as number] !== undefined) throw malformed(`reply holds index ${index} twice`);
    if (typeof embedding === "string") {
      if (!wholeFloats(embedding)) throw malformed("reply holds a base64 embedding that is not float32s");
      vectors[index as number] = embedding;
    } else if (Array.isArray(embedding) && embedding.every((x) => typeof x === "number"))
      vectors[index as number] = embedding as number[];
    else throw malformed("reply holds an embedding that is neither numbers nor base64");
  }
  const usage = raw.usage;
  const prompt = isObject(usage) ? usage.prompt_tokens : undefined;
  return {
    vectors,
    promptTokens: Number.isInteger(prompt) && (prompt as number) >= 0 ? (prompt as number) : undefined,
  };
}
