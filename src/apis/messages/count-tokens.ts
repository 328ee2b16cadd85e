// POST /v1/messages/count_tokens: the gateway's own count of a Messages request's prompt, the
// local o200k_base count (src/tokens/count.ts) of the canonical request, the one the gateway
// estimates usage with when an upstream reports none. Not an upstream's tokenizer: Claude's
// counts run higher, by a model-dependent share; nothing is sent upstream or charged.
import { localPromptTokens } from "../../providers/prompt-bound.ts";
import { canonicalRequest, checkMessages, countTokensSchema, parseBody } from "./request.ts";

export interface TokenCount {
  model: string;
  inputTokens: number;
}

export function countTokens(body: unknown): TokenCount {
  const req = { ...parseBody(countTokensSchema, body), max_tokens: Number.MAX_SAFE_INTEGER };
  checkMessages(req);
  return { model: req.model, inputTokens: localPromptTokens(canonicalRequest(req)) };
}
