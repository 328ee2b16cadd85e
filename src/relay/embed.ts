// One embeddings call (POST /v1/embeddings) as the relay's steps, the chat call's own where
// they are the same: resolve the model (Relay.embed), admit into one hold (./admission.ts:
// the inputs' bound, no output, money at the input price), open the answer through the
// model's deployments and fallbacks (./open.ts), finish (./finish.ts: the record, the
// charge, the metrics). Content safety does not apply: an embedding has no output to review.
import type { EmbeddingsCall } from "../apis/types.ts";
import type { EmbeddingRequest } from "../domain/embedding-request.ts";
import { ANSWERED, CLIENT_GONE } from "../domain/outcomes.ts";
import { fromUpstream, GatewayError } from "../errors/index.ts";
import type { ResolvedModel } from "../models/registry.ts";
import { formatUsd } from "../prices/usd.ts";
import type { EmbeddingResult } from "../providers/types.ts";
import type { CallDraft } from "../records/draft.ts";
import { candidates } from "../routing/candidates.ts";
import { estimator } from "../tokens/estimator.ts";
import { holdFor } from "./admission.ts";
import { embeddingBudget } from "./budget.ts";
import type { CallContext, RelayDeps } from "./call.ts";
import { openEmbeddings } from "./open.ts";

/** The request parameters an embeddings record keeps: how many inputs and what was asked of them, never their text. */
function recordedParams(req: EmbeddingRequest): string {
  const params: Record<string, unknown> = { inputs: req.inputs.length };
  if (req.tokenIds) params.token_ids = true;
  if (req.dimensions !== undefined) params.dimensions = req.dimensions;
  if (req.encoding_format !== undefined) params.encoding_format = req.encoding_format;
  return JSON.stringify(params);
}

/**
 * Runs the call: returns the JSON body to send, or undefined when the client left (recorded
 * here). Before any byte is sent, failures are recorded and thrown as GatewayError for the
 * HTTP error handler to answer. `resolve` finds the public model for the caller's plan.
 */
export async function runEmbedding(
  deps: RelayDeps,
  ctx: CallContext,
  client: EmbeddingsCall,
  resolve: (modelId: string) => ResolvedModel,
): Promise<string | undefined> {
  const { auth, draft } = ctx;
  const req = client.request;
  draft.publicModel = req.model;
  draft.params = recordedParams(req);
  const model = resolve(req.model);
  if (req.tokenIds) refuseTokenIds(model);
  const plan = deps.registry.plans.get(auth.account.plan_id);
  draft.priceMultiplier = plan?.price_multiplier ?? 1;
  const hold = await holdFor(deps, ctx, plan, embeddingBudget(model, req, draft.priceMultiplier));
  if (!hold) return undefined;
  const route = deps.router.route(model, ctx.clientSignal);
  try {
    let result: EmbeddingResult;
    try {
      result = await openEmbeddings(deps.metrics, ctx, route, {
        request: req,
        upstreamModel: model.upstreamModel,
        signal: route.signal,
      });
    } catch (err) {
      if (!ctx.clientSignal.aborted) throw err;
      // charged what the upstream read, as a chat call cut before its answer is
      draft.markEnded();
      await estimateInputs(draft, req);
      await deps.finisher.finish(draft, CLIENT_GONE, hold);
      return undefined;
    }
    await hold.mustHaveLanded();
    draft.markFirstToken();
    if (result.promptTokens !== undefined) draft.setUsage(result.promptTokens, 0, "upstream");
    else await estimateInputs(draft, req);
    await deps.finisher.finish(draft, ANSWERED, hold);
    ctx.setHeaders({ "x-gateway-cost-usd": formatUsd(draft.costNanos) });
    return client.json({ model: req.model, vectors: result.vectors, promptTokens: draft.promptTokens });
  } catch (err) {
    const failure = fromUpstream(err);
    await deps.finisher.fail(draft, failure, hold, client.api.error(failure).status);
    throw failure;
  } finally {
    route.end();
    await hold.close(draft.totalTokens);
  }
}

/**
 * Token ids go only where every candidate takes them: a model with a deployment that embeds
 * text only would answer such a call or refuse it by the luck of the routing.
 */
function refuseTokenIds(model: ResolvedModel): void {
  for (const d of candidates(model))
    if (!d.provider.embedsTokenIds)
      throw new GatewayError("invalid_request", {
        message: `The model '${model.config.id}' embeds text only: send the inputs as strings, not token ids.`,
        param: "input",
      });
}

/** The local count of the inputs (src/tokens/estimator.ts), for an upstream that reports none (Gemini). */
async function estimateInputs(draft: CallDraft, req: EmbeddingRequest): Promise<void> {
  const { prompt } = await estimator.count({ inputs: req.inputs }, { account: draft.accountId });
  draft.setUsage(prompt, 0, "estimated");
}
