// A call's admission as every kind of call takes it (chat, embeddings): its budget taken from
// the rate limits and held in the ledger (./hold.ts), or, when the client left while the
// request waited for tokens held by calls in flight, the call recorded as gone.
import type { PlanConfig } from "../config/schema.ts";
import { CLIENT_GONE } from "../domain/outcomes.ts";
import type { Budget } from "./budget.ts";
import type { CallContext, RelayDeps } from "./call.ts";
import { admit, type Hold } from "./hold.ts";

/** The call's hold; undefined when the client left first (recorded here: nothing was held). */
export async function holdFor(
  deps: RelayDeps,
  ctx: CallContext,
  plan: PlanConfig | undefined,
  budget: Budget,
): Promise<Hold | undefined> {
  try {
    return await admit(
      deps,
      ctx.auth,
      plan,
      ctx.rateTicket,
      budget,
      ctx.setHeaders,
      ctx.clientSignal,
      ctx.draft.session,
    );
  } catch (err) {
    if (!ctx.clientSignal.aborted) throw err;
    await deps.finisher.finish(ctx.draft, CLIENT_GONE);
    return undefined;
  }
}
