// `POST /v1beta/models/{model}:countTokens`: `{contents}` or `{generateContentRequest}`, as
// Google's CountTokensRequest. The route asks a Gemini upstream of the model for its own count
// when the model has one (the body goes as it came); otherwise, or when that upstream fails,
// it answers the gateway's local count of the canonical request (o200k_base, the count it
// estimates usage with; Gemini's tokenizer counts differently). The answer says which.
import type { ChatRequest } from "../../domain/chat-request.ts";
import { GatewayError } from "../../errors/index.ts";
import { promptParts } from "../../providers/prompt-bound.ts";
import { type CountOptions, estimator } from "../../tokens/estimator.ts";
import { canonicalRequest, countTokensSchema, parseBody } from "./request.ts";

export interface CountCall {
  /** the canonical request of what would be sent, for the local count */
  request: ChatRequest;
  /** the body as the client sent it, for a Gemini upstream's own count */
  body: Record<string, unknown>;
}

/** Validates a countTokens body (the contents alone, or a whole request: one of them). */
export function parseCountTokens(body: unknown, model: string): CountCall {
  const req = parseBody(countTokensSchema, body);
  if (req.contents !== undefined && req.generateContentRequest !== undefined)
    throw new GatewayError("invalid_request", {
      message: "Invalid value: send either contents or generateContentRequest, not both.",
      param: "contents",
    });
  const generate = req.generateContentRequest ?? (req.contents ? { contents: req.contents } : undefined);
  if (!generate?.contents.length)
    throw new GatewayError("invalid_request", {
      message: "Invalid value at 'contents': contents or generateContentRequest is required.",
      param: "contents",
    });
  return { request: canonicalRequest(generate, model, false).request, body: body as Record<string, unknown> };
}

/** The local count, queued on the counting thread for the account (refused when its queue is full). */
export async function localCount(request: ChatRequest, options: CountOptions = {}): Promise<number> {
  const { prompt } = await estimator.countOrRefuse(promptParts(request), options);
  return prompt;
}
