// JSON delivery: the whole answer, with exact usage, reviewed first when content safety is
// on, rendered by the client API's edge (restamped with our id and the public model).
import type { ClientCall } from "../apis/types.ts";
import type { Completion } from "../domain/completion.ts";
import { ANSWERED, CLIENT_GONE, WITHHELD } from "../domain/outcomes.ts";
import type { ReviewOutcome } from "../safety/policy.ts";
import type { WithheldLimiter } from "../safety/withheld-limiter.ts";
import type { CallContext } from "./call.ts";
import type { CallFinisher } from "./finish.ts";
import type { Hold } from "./hold.ts";
import { lastUserText, type ReviewDeps, review } from "./review.ts";
import { answerUsage, choiceText, noteUsage } from "./usage.ts";

export interface JsonDeps extends ReviewDeps {
  finisher: CallFinisher;
  /** counts the answers withheld per key */
  withheld: WithheldLimiter;
}

/** The body to send, or undefined when the client left before it was ready (recorded here). */
export async function deliverJson(
  deps: JsonDeps,
  ctx: CallContext,
  call: ClientCall,
  completion: Completion,
  reviewed: boolean,
  hold: Hold,
): Promise<string | undefined> {
  const { draft } = ctx;
  const req = call.request;
  draft.markFirstToken();
  const usage = completion.usage;
  let written = "";
  if (!usage) for (const c of completion.choices) written += choiceText(c.message);
  await noteUsage(draft, usage, req, written);
  const answer = {
    requestId: draft.requestId,
    model: req.model,
    startedAt: draft.startedAt,
    completion,
    usage: answerUsage(draft, usage, hold.reservation.tokens),
  };

  if (reviewed) {
    let text = "";
    for (const c of completion.choices) text += `${choiceText(c.message)}\n`;
    let outcome: ReviewOutcome;
    try {
      outcome = await review(deps, ctx, "output", text, lastUserText(req.messages));
    } catch (err) {
      if (!ctx.clientSignal.aborted) throw err; // safety_unavailable: recorded, nothing charged
      await deps.finisher.finish(draft, CLIENT_GONE, hold);
      return undefined;
    }
    if (outcome.flagged) {
      deps.withheld.note(ctx.auth.key.id);
      await deps.finisher.finish(draft, WITHHELD, hold);
      return await call.json({ ...answer, withheld: outcome });
    }
  }
  await deps.finisher.finish(draft, ANSWERED, hold);
  return await call.json(answer);
}
