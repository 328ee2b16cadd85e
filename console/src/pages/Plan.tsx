import { useApi } from "../api.ts";
import { DataTable } from "../components/DataTable.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtInt } from "../format.ts";
import { navigate } from "../router.tsx";
import { useSession } from "../session.tsx";
import type { AccountView, OverviewAnswer, PlansAnswer, PlanView, RateWindow } from "../types.ts";
import { QuotaBar } from "./Overview.tsx";

function windowText(limits: RateWindow): string | null {
  const parts: string[] = [];
  if (limits.rpm) parts.push(`${fmtInt(limits.rpm)} requests/min`);
  if (limits.tpm) parts.push(`${fmtInt(limits.tpm)} tokens/min`);
  return parts.length ? parts.join(", ") : null;
}

function limitsText(plan: PlanView): string {
  const perKey = windowText(plan.rate_limits.key);
  const perAccount = windowText(plan.rate_limits.account);
  const parts = [perKey && `per key ${perKey}`, perAccount && `per account ${perAccount}`].filter(Boolean);
  return parts.length ? parts.join("; ") : "none";
}

export function requestUpgrade(plan: PlanView, current: string): void {
  navigate("/tickets/new", {
    state: {
      draft: {
        kind: "plan_upgrade",
        subject: `Upgrade from ${current} to ${plan.id}`,
        description: `Please move this account to the plan "${plan.id}" (${fmtInt(plan.quota_tokens)} tokens).`,
        source: `the plan ${plan.id}`,
      },
    },
  });
}

export function PlanPage() {
  const { account } = useSession();
  const plans = useApi<PlansAnswer>("/plans");
  const overview = useApi<OverviewAnswer>("/overview");
  const fresh = overview.data?.account ?? account;
  return (
    <>
      <PageHeader title="Plan">
        <p>Your plan sets the models you may call, the token quota and the rate limits.</p>
      </PageHeader>
      {plans.error ? (
        <ErrorNotice error={plans.error} onRetry={plans.reload} />
      ) : !plans.data ? (
        <Loading what="Loading the plans" />
      ) : (
        <>
          <CurrentPlan account={fresh} current={plans.data.current} safety={plans.data.safety} />
          <section className="card section" aria-labelledby="all-plans">
            <h2 id="all-plans">Plans</h2>
            <DataTable
              rows={plans.data.plans}
              empty={<Empty title="No plans are offered." />}
              caption="The plans this gateway offers"
              rowKey={(plan) => plan.id}
              rowProps={(plan) => ({ className: plan.id === fresh.plan_id ? "row-current" : undefined })}
              columns={[
                { header: "Plan", rowHeader: true, cell: (plan) => plan.id },
                { header: "Quota (tokens)", num: true, cell: (plan) => fmtInt(plan.quota_tokens) },
                { header: "Rate limits", cell: limitsText },
                {
                  header: "Models",
                  cell: (plan) => plan.models.join(", ") || <span className="muted">none</span>,
                },
                {
                  header: "Action",
                  hideHeader: true,
                  cell: (plan) =>
                    plan.id === fresh.plan_id ? (
                      <span className="badge badge-good">Your plan</span>
                    ) : (
                      <button
                        type="button"
                        className="btn btn-small"
                        onClick={() => requestUpgrade(plan, fresh.plan_id)}
                      >
                        Request this plan<span className="sr-only"> ({plan.id})</span>
                      </button>
                    ),
                },
              ]}
            />
            <p className="muted small">
              Requesting a plan opens a plan-upgrade ticket; the change applies once support confirms it.
            </p>
          </section>
        </>
      )}
    </>
  );
}

function CurrentPlan({
  account,
  current,
  safety,
}: {
  account: AccountView;
  current: PlanView | null;
  safety: PlansAnswer["safety"];
}) {
  return (
    <section className="card section" aria-labelledby="current-plan">
      <h2 id="current-plan">
        Current plan: <span className="accent">{account.plan_id}</span>
      </h2>
      {!current && (
        <p className="notice notice-info">This plan is no longer offered; your account keeps its settings.</p>
      )}
      <QuotaBar used={Number(account.used_tokens)} quota={Number(account.quota_tokens)} />
      <dl className="details">
        <div>
          <dt>Quota</dt>
          <dd>
            {fmtInt(account.quota_tokens)} tokens
            {account.quota_source === "account" && <span className="muted"> (set for your account)</span>}
          </dd>
        </div>
        <div>
          <dt>Used</dt>
          <dd>{fmtInt(account.used_tokens)} tokens</dd>
        </div>
        <div>
          <dt>Remaining</dt>
          <dd>{fmtInt(account.remaining_tokens)} tokens</dd>
        </div>
        <div>
          <dt>Content safety</dt>
          <dd data-testid="safety-mode">{safetyText(safety)}</dd>
        </div>
        {current && (
          <>
            <div>
              <dt>Rate limits</dt>
              <dd>{limitsText(current)}</dd>
            </div>
            <div>
              <dt>Models</dt>
              <dd>{current.models.join(", ") || "none"}</dd>
            </div>
          </>
        )}
      </dl>
    </section>
  );
}

/** What a client author needs to know: does `stream: true` still get SSE? */
function safetyText(safety: PlansAnswer["safety"]): string {
  if (!safety.enabled) return "off: answers are not reviewed";
  return safety.streaming === "reviewed"
    ? "on, reviewed streaming: streams arrive as SSE, released in reviewed segments"
    : "on: a request with stream: true is answered with one reviewed JSON body, not SSE (see docs/content-safety.md)";
}
