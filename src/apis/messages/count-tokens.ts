// POST /v1/messages/count_tokens: the gateway's own count of a Messages request's prompt, the
// local o200k_base count (src/tokens/count.ts, off the event loop by src/tokens/estimator.ts)
// of the canonical request, the one the gateway estimates usage with when an upstream reports none. Not an upstream's tokenizer: Claude's
// counts run higher, by a model-dependent share; nothing is sent upstream or charged.
import { promptParts } from "../../providers/prompt-bound.ts";
import { type CountOptions, estimator } from "../../tokens/estimator.ts";
import { canonicalRequest, checkMessages, countTokensSchema, parseBody } from "./request.ts";

export interface TokenCount {
  model: string;
  inputTokens: number;
}

/**
 * `options`: the account the count is queued for and the request's signal (the count is
 * dropped when its client leaves); a full queue refuses it (429 or 503, src/tokens/estimator.ts).
 */
export async function countTokens(body: unknown, options: CountOptions = {}): Promise<TokenCount> {
  const req = { ...parseBody(countTokensSchema, body), max_tokens: Number.MAX_SAFE_INTEGER };
  checkMessages(req);
  const { prompt } = await estimator.countOrRefuse(promptParts(canonicalRequest(req).request), options);
  return { model: req.model, inputTokens: prompt };
}
