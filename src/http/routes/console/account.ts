// The account's overview (quota, budget, today, the last 30 days by key and model), the models its
// plan offers, and the plans that exist.
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { utcDay } from "../../../records/days.ts";
import { dailyUsage } from "../../../records/queries.ts";
import { safetySettings } from "../../../safety/policy.ts";
import type { List, ModelView, OverviewAnswer, PlansAnswer } from "../../../views/console.ts";
import type { GatewayDeps } from "../../deps.ts";
import { accountFor, accountQuery, accountView, parseInput, planView, userOf } from "./context.ts";

/** the overview's chart: the last 30 UTC days, today included */
const CHART_DAYS = 30;

const scopeQuery = z.object(accountQuery).strict();

export async function accountRoutes(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  app.get("/overview", async (request): Promise<OverviewAnswer> => {
    const query = parseInput(scopeQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), query.account);
    const now = Date.now();
    const daily = await dailyUsage(deps.store.db, account.id, CHART_DAYS, now);
    const today = utcDay(now);
    let tokens = 0;
    let calls = 0;
    let costNanos = 0;
    for (const d of daily)
      if (d.day === today) {
        tokens += d.tokens;
        calls += d.calls;
        costNanos += d.cost_nanos;
      }
    const plan = deps.registry.plans.get(account.plan_id);
    return {
      account: accountView(deps, account),
      plan: plan ? planView(plan) : null,
      today: { day: today, tokens, calls, cost_nanos: costNanos },
      daily,
    };
  });

  app.get("/models", async (request): Promise<List<ModelView>> => {
    const query = parseInput(scopeQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), query.account);
    const plan = deps.registry.plans.get(account.plan_id);
    return {
      data: (plan?.models ?? []).map((id) => ({ id, owned_by: deps.registry.model(id)?.ownedBy ?? null })),
    };
  });

  app.get("/plans", async (request): Promise<PlansAnswer> => {
    const query = parseInput(scopeQuery, request.query, "query");
    const account = await accountFor(deps, userOf(request), query.account);
    const current = deps.registry.plans.get(account.plan_id);
    return {
      current: current ? planView(current) : null,
      plans: deps.config.plans.map(planView),
      safety: safetySettings(deps.config.safety, current, account),
    };
  });
}
