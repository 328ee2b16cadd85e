import { useApi } from "../api.ts";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { fmtInt } from "../format.ts";
import { navigate } from "../router.tsx";
import { useSession } from "../session.tsx";
import type { Account, Plan, RateWindowLimits } from "../types.ts";
import { QuotaBar } from "./Overview.tsx";

function windowText(limits: RateWindowLimits | undefined): string | null {
  const parts: string[] = [];
  if (limits?.rpm) parts.push(`${fmtInt(limits.rpm)} requests/min`);
  if (limits?.tpm) parts.push(`${fmtInt(limits.tpm)} tokens/min`);
  return parts.length ? parts.join(", ") : null;
}

function limitsText(plan: Plan): string {
  const perKey = windowText(plan.rate_limits?.key);
  const perAccount = windowText(plan.rate_limits?.account);
  const parts = [perKey && `per key ${perKey}`, perAccount && `per account ${perAccount}`].filter(Boolean);
  return parts.length ? parts.join("; ") : "none";
}

export function requestUpgrade(plan: Plan, current: string): void {
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
  const plans = useApi<{ current: Plan | null; plans: Plan[] }>("/plans");
  const overview = useApi<{ account: Account }>("/overview");
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
          <CurrentPlan account={fresh} current={plans.data.current} />
          <section className="card section" aria-labelledby="all-plans">
            <h2 id="all-plans">Plans</h2>
            {plans.data.plans.length === 0 ? (
              <Empty title="No plans are offered." />
            ) : (
              <div className="table-wrap">
                <table>
                  <caption className="sr-only">The plans this gateway offers</caption>
                  <thead>
                    <tr>
                      <th scope="col">Plan</th>
                      <th scope="col" className="num">
                        Quota (tokens)
                      </th>
                      <th scope="col">Rate limits</th>
                      <th scope="col">Models</th>
                      <th scope="col">
                        <span className="sr-only">Action</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {plans.data.plans.map((plan) => {
                      const isCurrent = plan.id === fresh.plan_id;
                      return (
                        <tr key={plan.id} className={isCurrent ? "row-current" : undefined}>
                          <th scope="row">{plan.id}</th>
                          <td className="num">{fmtInt(plan.quota_tokens)}</td>
                          <td>{limitsText(plan)}</td>
                          <td>{plan.models.join(", ") || <span className="muted">none</span>}</td>
                          <td>
                            {isCurrent ? (
                              <span className="badge badge-good">Your plan</span>
                            ) : (
                              <button
                                type="button"
                                className="btn btn-small"
                                onClick={() => requestUpgrade(plan, fresh.plan_id)}
                              >
                                Request this plan<span className="sr-only"> ({plan.id})</span>
                              </button>
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )}
            <p className="muted small">
              Requesting a plan opens a plan-upgrade ticket; the change applies once support confirms it.
            </p>
          </section>
        </>
      )}
    </>
  );
}

function CurrentPlan({ account, current }: { account: Account; current: Plan | null }) {
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
