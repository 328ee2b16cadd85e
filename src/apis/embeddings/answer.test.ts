import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { base64Floats, embeddingsBody, float32Base64 } from "./answer.ts";

describe("the embeddings answer", () => {
  // values exact in float32, and one that is not
  const vector = [0.5, -0.25, 1, 0, 0.1];

  test("base64 is the float32s little-endian, as OpenAI sends it, and decodes back", () => {
    const encoded = float32Base64(vector);
    const bytes = Buffer.from(encoded, "base64");
    assert.equal(bytes.length, 20);
    assert.equal(bytes.readFloatLE(4), -0.25);
    assert.deepEqual(base64Floats(encoded), vector.map(Math.fround));
  });

  test("OpenAI's shape, each vector in the encoding asked for, whichever the upstream gave", () => {
    const answer = { model: "embed", vectors: [vector, float32Base64([2, 3])], promptTokens: 7 };
    assert.deepEqual(JSON.parse(embeddingsBody(answer, "float")), {
      object: "list",
      data: [
        { object: "embedding", index: 0, embedding: vector },
        { object: "embedding", index: 1, embedding: [2, 3] },
      ],
      model: "embed",
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
    const b64 = JSON.parse(embeddingsBody(answer, "base64"));
    assert.deepEqual(
      b64.data.map((d: { embedding: string }) => d.embedding),
      [float32Base64(vector), float32Base64([2, 3])],
    );
  });
});
