// POST /v1/embeddings as the gateway serves it: OpenAI's request and answer, OpenAI's key
// header and error envelope. Embeddings are not conversations, so the edge is a ClientEdge
// (src/apis/types.ts) with a call of its own kind, which the relay runs as
// src/relay/embed.ts.
import type { IncomingHttpHeaders } from "node:http";
import { parseBearer } from "../../accounts/key-format.ts";
import { type EmbeddingRequest, parseEmbeddingRequest } from "../../domain/embedding-request.ts";
import type { GatewayError } from "../../errors/index.ts";
import type { ClientEdge, EmbeddingAnswer, EmbeddingsCall, ErrorAnswer } from "../types.ts";
import { embeddingsBody } from "./answer.ts";

export const embeddings: ClientEdge & { parse(body: unknown): EmbeddingsCall } = {
  name: "embeddings",
  credential: (headers: IncomingHttpHeaders) => parseBearer(headers.authorization),
  error: (error: GatewayError): ErrorAnswer => ({
    status: error.status,
    body: JSON.stringify(error.toBody()),
  }),
  parse(body: unknown): EmbeddingsCall {
    const request = parseEmbeddingRequest(body);
    return new EmbeddingsCallOf(request);
  },
};

class EmbeddingsCallOf implements EmbeddingsCall {
  readonly api = embeddings;
  readonly request: EmbeddingRequest;

  constructor(request: EmbeddingRequest) {
    this.request = request;
  }

  json(answer: EmbeddingAnswer): string {
    return embeddingsBody(answer, this.request.encoding_format ?? "float");
  }
}
