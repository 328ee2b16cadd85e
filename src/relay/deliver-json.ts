// JSON delivery: one `chat.completion` body, restamped with our id and the public model,
// with exact usage, reviewed first when content safety is on.
import type { ChatRequest } from "../apis/chat-completions/request.ts";
import type { Completion } from "../providers/types.ts";
import { ANSWERED, CLIENT_GONE, WITHHELD } from "../records/outcomes.ts";
import type { ReviewOutcome } from "../safety/policy.ts";
import type { CallContext } from "./call.ts";
import type { CallFinisher } from "./finish.ts";
import type { Hold } from "./hold.ts";
import { lastUserText, type ReviewDeps, review, withheldCompletion } from "./review.ts";
import { completionId } from "./stream/restamp.ts";
import { choiceText, clientUsage, noteUsage } from "./usage.ts";

export interface JsonDeps extends ReviewDeps {
  finisher: CallFinisher;
}

/** The body to send, or undefined when the client left before it was ready (recorded here). */
export async function deliverJson(
  deps: JsonDeps,
  ctx: CallContext,
  req: ChatRequest,
  completion: Completion,
  reviewed: boolean,
  hold: Hold,
): Promise<string | undefined> {
  const { draft } = ctx;
  draft.markFirstToken();
  const usage = completion.usage;
  let written = "";
  if (!usage) for (const c of completion.choices) written += choiceText(c.message);
  noteUsage(draft, usage, req, written);
  const body = completion as Record<string, unknown>;
  body.id = completionId(draft.requestId);
  body.object = "chat.completion";
  body.created ??= Math.floor(draft.startedAt / 1000);
  body.model = req.model;
  body.usage = clientUsage(draft, usage);

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
      await deps.finisher.finish(draft, WITHHELD, hold);
      return JSON.stringify(withheldCompletion(completion, body.usage, outcome));
    }
  }
  await deps.finisher.finish(draft, ANSWERED, hold);
  return JSON.stringify(body);
}
