import { useState } from "react";
import { useApi } from "../api.ts";
import { budgetText } from "../components/Budget.tsx";
import { type ChartGroup, type ChartMeasure, DailyChart } from "../components/DailyChart.tsx";
import { Empty, ErrorNotice, Loading } from "../components/Notice.tsx";
import { PageHeader } from "../components/PageHeader.tsx";
import { Segments } from "../components/Segments.tsx";
import { fmtInt, fmtUsd, timeZone, utcDayStartLocal } from "../format.ts";
import { Link } from "../router.tsx";
import type { OverviewAnswer } from "../types.ts";

export function QuotaBar({ used, quota }: { used: number; quota: number }) {
  const share = quota > 0 ? Math.min(1, used / quota) : 1;
  const tone = share >= 0.9 ? "bad" : share >= 0.75 ? "warn" : "good";
  return (
    // the figures are written next to it; the bar only shows them
    <div className={`meter meter-${tone}`} aria-hidden="true">
      <span className="meter-fill" style={{ width: `${(share * 100).toFixed(1)}%` }} />
    </div>
  );
}

export function OverviewPage() {
  const overview = useApi<OverviewAnswer>("/overview");
  const [group, setGroup] = useState<ChartGroup>("key");
  const [measure, setMeasure] = useState<ChartMeasure>("tokens");

  return (
    <>
      <PageHeader title="Overview" />
      {overview.error ? (
        <ErrorNotice error={overview.error} onRetry={overview.reload} />
      ) : !overview.data ? (
        <Loading what="Loading the overview" />
      ) : (
        <OverviewBody
          data={overview.data}
          group={group}
          setGroup={setGroup}
          measure={measure}
          setMeasure={setMeasure}
        />
      )}
    </>
  );
}

function OverviewBody({
  data,
  group,
  setGroup,
  measure,
  setMeasure,
}: {
  data: OverviewAnswer;
  group: ChartGroup;
  setGroup: (g: ChartGroup) => void;
  measure: ChartMeasure;
  setMeasure: (m: ChartMeasure) => void;
}) {
  const { account, today, daily } = data;
  const quota = Number(account.quota_tokens);
  const used = Number(account.used_tokens);
  return (
    <>
      <section className="stats" aria-label="Account figures">
        <div className="card stat">
          <h2 className="stat-label">Plan</h2>
          <p className="stat-value">{data.plan?.id ?? account.plan_id}</p>
          <p className="muted small">
            <Link to="/plan">Plans and upgrades</Link>
          </p>
        </div>
        <div className="card stat stat-wide">
          <h2 className="stat-label">Quota</h2>
          <p className="stat-value">
            {fmtInt(account.remaining_tokens)} <span className="stat-unit">tokens left</span>
          </p>
          <QuotaBar used={used} quota={quota} />
          <p className="muted small">
            {fmtInt(used)} used of {fmtInt(quota)}
          </p>
        </div>
        {account.budget_nanos === null ? (
          <div className="card stat" data-testid="budget">
            <h2 className="stat-label">Spent</h2>
            <p className="stat-value">{fmtUsd(account.spent_nanos)}</p>
            <p className="muted small">all time; no budget</p>
          </div>
        ) : (
          <div className="card stat stat-wide" data-testid="budget">
            <h2 className="stat-label">Budget</h2>
            <p className="stat-value">
              {fmtUsd(account.left_nanos)} <span className="stat-unit">left</span>
            </p>
            <QuotaBar used={Number(account.spent_nanos)} quota={Number(account.budget_nanos)} />
            <p className="muted small">{budgetText(account)}</p>
          </div>
        )}
        <div className="card stat">
          <h2 className="stat-label">Spent today</h2>
          <p className="stat-value">{fmtUsd(today.cost_nanos)}</p>
          <p className="muted small">since 00:00 UTC</p>
        </div>
        <div className="card stat">
          <h2 className="stat-label">Tokens today</h2>
          <p className="stat-value">{fmtInt(today.tokens)}</p>
          <p className="muted small">since 00:00 UTC</p>
        </div>
        <div className="card stat">
          <h2 className="stat-label">Calls today</h2>
          <p className="stat-value">{fmtInt(today.calls)}</p>
          <p className="muted small">
            <Link to="/records">See today's calls</Link>
          </p>
        </div>
      </section>
      {account.disabled && (
        <div className="notice notice-error" role="alert">
          <p>This account is disabled: its keys are refused. Open a ticket to find out why.</p>
        </div>
      )}
      <section className="card section" aria-labelledby="chart-title">
        <div className="section-head">
          <h2 id="chart-title">Daily consumption, last 30 days</h2>
          <div className="chart-controls">
            <Segments
              name="chart-measure"
              legend="Show"
              value={measure}
              options={[
                ["tokens", "Tokens"],
                ["cost", "Cost"],
              ]}
              onChange={setMeasure}
            />
            <Segments
              name="chart-group"
              legend="Split the bars by"
              value={group}
              options={[
                ["key", "By key"],
                ["model", "By model"],
              ]}
              onChange={setGroup}
            />
          </div>
        </div>
        <p className="muted small">
          Bars are UTC days (a UTC day starts at {utcDayStartLocal()} in your time zone, {timeZone()}).
        </p>
        {daily.length === 0 ? (
          <Empty title="No calls in the last 30 days yet.">
            <Link to="/keys">Create a key</Link> and make a first call; it shows here the same day.
          </Empty>
        ) : (
          <DailyChart rows={daily} group={group} measure={measure} />
        )}
      </section>
    </>
  );
}
