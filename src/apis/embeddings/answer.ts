// OpenAI's embeddings answer: `{object: "list", data: [{object: "embedding", index,
// embedding}], model, usage: {prompt_tokens, total_tokens}}`, each embedding in the encoding
// the client asked for. OpenAI's base64 is the vector's float32s, little-endian; the gateway
// encodes floats so itself when the upstream gave floats (Gemini, a server that ignores
// `encoding_format`), and decodes an upstream's base64 for a client that asked for floats.
import type { EncodingFormat } from "../../domain/embedding-request.ts";
import type { EmbeddingAnswer } from "../types.ts";

/** The float32s of a vector, little-endian, in base64: what OpenAI sends for `encoding_format: base64`. */
export function float32Base64(vector: readonly number[]): string {
  const bytes = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString("base64");
}

/** The floats of OpenAI's base64 encoding (adapters checked it holds whole float32s). */
export function base64Floats(encoded: string): number[] {
  const bytes = Buffer.from(encoded, "base64");
  const out = new Array<number>(bytes.length >>> 2);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readFloatLE(i * 4);
  return out;
}

export function embeddingsBody(answer: EmbeddingAnswer, encoding: EncodingFormat): string {
  const data = answer.vectors.map((vector, index) => ({
    object: "embedding",
    index,
    embedding:
      encoding === "base64"
        ? typeof vector === "string"
          ? vector
          : float32Base64(vector)
        : typeof vector === "string"
          ? base64Floats(vector)
          : vector,
  }));
  return JSON.stringify({
    object: "list",
    data,
    model: answer.model,
    usage: { prompt_tokens: answer.promptTokens, total_tokens: answer.promptTokens },
  });
}
