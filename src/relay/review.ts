// The review step of content safety: one review noted on the call's draft (verdict,
// categories, time) and the input review that can refuse a call. What every client API says
// in place of output that was withheld is src/safety/withheld.ts.
import type { Logger } from "pino";
import type { ChatRequest } from "../domain/chat-request.ts";
import { GatewayError } from "../errors/index.ts";
import type { ReviewOutcome, SafetyPolicy } from "../safety/policy.ts";
import type { ReviewStage } from "../safety/types.ts";
import { messageText } from "../tokens/count.ts";
import type { CallContext } from "./call.ts";

export interface ReviewDeps {
  safety: SafetyPolicy;
  logger: Logger;
}

/**
 * One review. A review that cannot finish becomes 503 safety_unavailable; when the client
 * left, its abort reason is rethrown.
 */
export async function review(
  deps: ReviewDeps,
  ctx: CallContext,
  stage: ReviewStage,
  text: string,
  context: string | undefined,
): Promise<ReviewOutcome> {
  const { draft } = ctx;
  const started = performance.now();
  try {
    const outcome = await deps.safety.review(stage, text, context, ctx.clientSignal);
    if (outcome.flagged) {
      draft.safetyVerdict = "flagged";
      draft.safetyCategories = outcome.categories;
    } else draft.safetyVerdict ??= "pass";
    return outcome;
  } catch (err) {
    if (ctx.clientSignal.aborted) throw err;
    draft.safetyVerdict = "error";
    deps.logger.warn(
      { request_id: draft.requestId, stage, reason: err instanceof Error ? err.message : String(err) },
      "content safety review failed; the call fails closed",
    );
    throw new GatewayError("safety_unavailable", { cause: err });
  } finally {
    draft.safetyMs = (draft.safetyMs ?? 0) + Math.round(performance.now() - started);
  }
}

/** Reviews the caller's messages before anything goes upstream; a flag refuses the call (400). */
export async function reviewInput(deps: ReviewDeps, ctx: CallContext, req: ChatRequest): Promise<void> {
  let text = "";
  for (const m of req.messages) text += `${messageText(m.content).text}\n`;
  const outcome = await review(deps, ctx, "input", text, undefined);
  if (outcome.flagged)
    throw new GatewayError("content_filter", {
      message: `The request was blocked by the content safety review (${outcome.categories.join(", ")}).`,
      param: "messages",
    });
}

/** The text of the caller's last user message: the context a judge reads an answer in. */
export function lastUserText(messages: ChatRequest["messages"]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i]!.role === "user") return messageText(messages[i]!.content).text;
  return undefined;
}
