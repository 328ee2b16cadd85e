import { type ReactNode, useEffect, useId, useState } from "react";
import { usage, useAdminApi } from "../../admin-api.ts";
import type { UsageGroup, UsageRow } from "../../admin-types.ts";
import { useApi } from "../../api.ts";
import { Badge } from "../../components/Badge.tsx";
import { type BarSeries, colourSeries, StackedBars } from "../../components/DailyChart.tsx";
import { DataTable } from "../../components/DataTable.tsx";
import { Empty, ErrorNotice, Loading } from "../../components/Notice.tsx";
import { Segments } from "../../components/Segments.tsx";
import { fmtCompact, fmtInt, fmtMs, fmtUsd, fmtUsdCompact, keyLabel, utcToday } from "../../format.ts";
import { navigate, useLocation } from "../../router.tsx";
import type { AccountView, AdminKeyView, List } from "../../types.ts";
import {
  bucketLong,
  bucketShort,
  byBucket,
  daysRange,
  PRESETS,
  type Preset,
  percent,
  presetRange,
  type Range,
  remainder,
  topRows,
  totalsOf,
} from "../../usage.ts";

type MeasureId = "calls" | "tokens" | "cost" | "errors";
type Split = "total" | "model" | "provider" | "account";

const MEASURES: Record<
  MeasureId,
  { of: (r: UsageRow) => number; fmt: (v: number) => string; axis: (v: number) => string; unit: string }
> = {
  calls: { of: (r) => Number(r.calls), fmt: (v) => `${fmtInt(v)} calls`, axis: fmtCompact, unit: "Calls" },
  tokens: {
    of: (r) => Number(r.total_tokens),
    fmt: (v) => `${fmtInt(v)} tokens`,
    axis: fmtCompact,
    unit: "Tokens",
  },
  cost: { of: (r) => Number(r.cost_nanos), fmt: fmtUsd, axis: fmtUsdCompact, unit: "Spend" },
  errors: {
    of: (r) => Number(r.errors),
    fmt: (v) => `${fmtInt(v)} errors`,
    axis: fmtCompact,
    unit: "Errors",
  },
};

/** a split into more parts than this sums the rest as "Others" */
const SPLIT_PARTS = 5;
/** the accounts' and keys' tables show the largest this many */
const TOP = 10;

function rangeOf(query: URLSearchParams): {
  range: Range | null;
  error: Error | null;
  preset: Preset | "custom";
} {
  const from = query.get("from");
  const to = query.get("to");
  if (from || to) {
    try {
      return { range: daysRange(from ?? "", to ?? ""), error: null, preset: "custom" };
    } catch (err) {
      return { range: null, error: err as Error, preset: "custom" };
    }
  }
  const asked = query.get("range");
  const preset: Preset = asked && asked in PRESETS ? (asked as Preset) : "7d";
  return { range: presetRange(preset), error: null, preset };
}

/** GET /admin/v1/usage over the range, grouped one way. */
function useUsage(range: Range | null, group_by: UsageGroup) {
  return useAdminApi<{ data: UsageRow[] }>(
    range && "/usage",
    range ? { from: range.from, to: range.to, group_by } : {},
  );
}

export function DashboardTab() {
  const location = useLocation();
  const { range, error: rangeError, preset } = rangeOf(location.query);
  const [measure, setMeasure] = useState<MeasureId>("calls");
  const [split, setSplit] = useState<Split>("total");
  const timeline = useUsage(range, range?.unit ?? "day");
  const byModel = useUsage(range, "model");
  const byProvider = useUsage(range, "provider");
  const byAccount = useUsage(range, "account");
  const byKey = useUsage(range, "key");
  const byStatus = useUsage(range, "status");
  // names for the account and key ids the usage is grouped by
  const accounts = useApi<List<AccountView>>("/admin/accounts");
  const keys = useApi<List<AdminKeyView>>("/admin/keys");
  const accountName = (id: string) => accounts.data?.data.find((a) => a.id === id)?.name ?? id;
  const splitRows = { total: undefined, model: byModel, provider: byProvider, account: byAccount }[split];
  const parts = useSplit(range, split, splitRows?.data?.data, MEASURES[measure].of);

  const m = MEASURES[measure];
  const series = seriesOf(range, timeline.data?.data, split, parts.data, m.of, (id) =>
    split === "account" ? accountName(id) : id || "none",
  );
  const totals = timeline.data ? totalsOf(timeline.data.data) : null;
  const setRange = (query: string) => navigate(`/operations/dashboard${query}`, { replace: true });

  return (
    <>
      <RangePicker
        preset={preset}
        range={range}
        onPreset={(p) => setRange(`?range=${p}`)}
        onDays={(from, to) => setRange(`?from=${from}&to=${to}`)}
      />
      <ErrorNotice error={rangeError} />
      {range && (
        <>
          {timeline.error ? (
            <ErrorNotice error={timeline.error} onRetry={timeline.reload} />
          ) : !totals ? (
            <Loading what="Loading the figures" />
          ) : (
            <section className="stats" aria-label="The range's figures">
              <Stat id="calls" label="Calls" value={fmtInt(totals.calls)} sub="failed ones too" />
              <Stat
                id="errors"
                label="Errors"
                value={fmtInt(totals.errors)}
                sub={`${percent(totals.errors, totals.calls)} of the calls`}
              />
              <Stat
                id="tokens"
                label="Tokens"
                value={fmtInt(totals.total_tokens)}
                sub={`${fmtInt(totals.prompt_tokens)} in, ${fmtInt(totals.completion_tokens)} out`}
              />
              <Stat
                id="spend"
                label="Spend"
                value={fmtUsd(totals.cost_nanos)}
                sub="charged to the accounts"
              />
              <Stat
                id="latency"
                label="Latency"
                value={fmtMs(totals.avg_latency_ms === null ? null : Math.round(totals.avg_latency_ms))}
                sub="average per call"
              />
            </section>
          )}
          <section className="card section" aria-labelledby="usage-chart-title">
            <div className="section-head">
              <h2 id="usage-chart-title">
                {m.unit} per {range.unit === "hour" ? "hour" : "day"}
              </h2>
              <div className="chart-controls">
                <Segments
                  name="usage-measure"
                  legend="Show"
                  value={measure}
                  options={[
                    ["calls", "Calls"],
                    ["tokens", "Tokens"],
                    ["cost", "Spend"],
                    ["errors", "Errors"],
                  ]}
                  onChange={setMeasure}
                />
                <Segments
                  name="usage-split"
                  legend="Split the bars by"
                  value={split}
                  options={[
                    ["total", "Total"],
                    ["model", "By model"],
                    ["provider", "By provider"],
                    ["account", "By account"],
                  ]}
                  onChange={setSplit}
                />
              </div>
            </div>
            <p className="muted small">
              Bars are UTC {range.unit === "hour" ? "hours" : "days"}
              {split !== "total" &&
                `; the ${SPLIT_PARTS} largest ${split}s by ${m.unit.toLowerCase()}, the rest as Others`}
              .
            </p>
            {timeline.error || parts.error ? (
              <ErrorNotice error={timeline.error ?? parts.error} onRetry={timeline.reload} />
            ) : !timeline.data || (split !== "total" && !parts.data) ? (
              <Loading what="Loading the chart" />
            ) : (
              <StackedBars
                buckets={range.buckets}
                series={series}
                fmt={m.fmt}
                axis={m.axis}
                describe={(total) =>
                  `${m.unit} per UTC ${range.unit}${split === "total" ? "" : ` by ${split}`}: ${total} in total.`
                }
                bucketShort={bucketShort}
                bucketTitle={bucketLong}
                legendLabel={`Chart legend, ${split === "total" ? "total" : `by ${split}`}`}
                table={
                  <DataTable
                    rows={range.buckets.flatMap((b) =>
                      series.filter((s) => s.byBucket.has(b)).map((s) => ({ bucket: b, series: s })),
                    )}
                    rowKey={(r) => `${r.bucket}|${r.series.id}`}
                    empty={<Empty title="Nothing in this range." />}
                    columns={[
                      {
                        header: range.unit === "hour" ? "Hour (UTC)" : "Day (UTC)",
                        cell: (r) => bucketLong(r.bucket),
                      },
                      { header: "Series", cell: (r) => r.series.label },
                      { header: m.unit, num: true, cell: (r) => m.fmt(r.series.byBucket.get(r.bucket) ?? 0) },
                    ]}
                  />
                }
              />
            )}
          </section>
          <div className="dashboard-grid">
            <UsageSection id="by-model" title="By model" rows={byModel} label={(g) => g || "no model"} />
            <UsageSection id="by-provider" title="By provider" rows={byProvider} label={(g) => g || "none"} />
            <UsageSection
              id="by-account"
              title={`Top ${TOP} accounts`}
              rows={byAccount}
              top={TOP}
              label={(g) => (g ? accountName(g) : "no account")}
            />
            <UsageSection
              id="by-key"
              title={`Top ${TOP} keys`}
              rows={byKey}
              top={TOP}
              label={(g) => {
                const k = keys.data?.data.find((key) => key.id === g);
                if (!g) return "no key";
                return k ? (
                  <>
                    {keyLabel(k.prefix, k.name)}
                    <span className="cell-sub">{k.account_name}</span>
                  </>
                ) : (
                  <code>{g}</code>
                );
              }}
            />
            <LatencySection rows={byProvider} />
            <UsageSection
              id="by-status"
              title="By status"
              rows={byStatus}
              label={(g) => <Badge value={g} />}
            />
          </div>
        </>
      )}
    </>
  );
}

/** The chart's series: the whole, or its largest parts and the rest as "Others". */
function seriesOf(
  range: Range | null,
  whole: UsageRow[] | undefined,
  split: Split,
  parts: { id: string; rows: UsageRow[] }[] | undefined,
  measure: (r: UsageRow) => number,
  label: (group: string) => string,
): BarSeries[] {
  if (!range || !whole) return [];
  const all = byBucket(whole, range.unit, measure);
  const sum = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
  if (split === "total" || !parts)
    return colourSeries([{ id: "total", label: "All calls", byBucket: all, total: sum(all) }]);
  const pieces = parts.map((p) => {
    const map = byBucket(p.rows, range.unit, measure);
    return { id: p.id, label: label(p.id), byBucket: map, total: sum(map) };
  });
  const rest = remainder(
    all,
    pieces.map((p) => p.byBucket),
  );
  return colourSeries([...pieces, { id: "(other)", label: "Others", byBucket: rest, total: sum(rest) }]);
}

function Stat({ id, label, value, sub }: { id: string; label: string; value: string; sub: string }) {
  return (
    <div className="card stat" data-testid={`stat-${id}`}>
      <h2 className="stat-label">{label}</h2>
      <p className="stat-value">{value}</p>
      <p className="muted small">{sub}</p>
    </div>
  );
}

/** A preset range, or chosen UTC days. */
function RangePicker({
  preset,
  range,
  onPreset,
  onDays,
}: {
  preset: Preset | "custom";
  range: Range | null;
  onPreset: (p: Preset) => void;
  onDays: (from: string, to: string) => void;
}) {
  const id = useId();
  const lastDay = range ? new Date(range.to - 1).toISOString().slice(0, 10) : utcToday();
  const firstDay = range ? new Date(range.from).toISOString().slice(0, 10) : utcToday();
  const [from, setFrom] = useState(firstDay);
  const [to, setTo] = useState(lastDay);
  // a preset chosen: the day fields show its days
  useEffect(() => {
    setFrom(firstDay);
    setTo(lastDay);
  }, [firstDay, lastDay]);
  return (
    <section className="card section range-picker" aria-label="Time range">
      <div className="chart-controls">
        <Segments
          name="usage-range"
          legend="Range"
          value={preset}
          options={[...(Object.entries(PRESETS) as [Preset, string][]), ["custom", "Chosen days"] as const]}
          onChange={(p) => {
            if (p !== "custom") onPreset(p);
            else document.getElementById(`${id}-from`)?.focus();
          }}
        />
      </div>
      <form
        className="inline-form"
        aria-label="Chosen days"
        onSubmit={(e) => {
          e.preventDefault();
          onDays(from, to);
        }}
      >
        <div className="field">
          <label htmlFor={`${id}-from`}>First day (UTC)</label>
          <input
            id={`${id}-from`}
            type="date"
            value={from}
            max={to}
            onChange={(e) => setFrom(e.target.value)}
          />
        </div>
        <div className="field">
          <label htmlFor={`${id}-to`}>Last day (UTC)</label>
          <input id={`${id}-to`} type="date" value={to} min={from} onChange={(e) => setTo(e.target.value)} />
        </div>
        <button type="submit" className="btn">
          Show these days
        </button>
      </form>
    </section>
  );
}

/** The series of the largest groups of a split, each fetched over the range by its filter. */
function useSplit(
  range: Range | null,
  split: Split,
  groups: UsageRow[] | undefined,
  measure: (r: UsageRow) => number,
) {
  const top = split === "total" || !groups ? [] : topRows(groups, SPLIT_PARTS, measure).map((r) => r.group);
  const key =
    range && split !== "total" && groups ? `${range.from}|${range.to}|${split}|${top.join("\n")}` : null;
  const [state, setState] = useState<{
    key: string | null;
    data?: { id: string; rows: UsageRow[] }[];
    error?: Error;
  }>({ key: null });

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for the range, the split and its groups
  useEffect(() => {
    if (key === null || !range || split === "total") return;
    const controller = new AbortController();
    Promise.all(
      top.map((group) =>
        usage({ from: range.from, to: range.to, group_by: range.unit, [split]: group }, controller.signal),
      ),
    ).then(
      (answers) => setState({ key, data: top.map((id, i) => ({ id, rows: answers[i]?.data ?? [] })) }),
      (error: Error) => {
        if (error.name !== "AbortError") setState({ key, error });
      },
    );
    return () => controller.abort();
  }, [key]);

  return state.key === key ? state : { key, data: undefined, error: undefined };
}

function UsageSection({
  id,
  title,
  rows,
  label,
  top,
}: {
  id: string;
  title: string;
  rows: ReturnType<typeof useUsage>;
  label: (group: string) => ReactNode;
  top?: number;
}) {
  const sorted = rows.data
    ? topRows(rows.data.data, top ?? rows.data.data.length, (r) => Number(r.calls))
    : undefined;
  return (
    <section className="card section" aria-labelledby={`${id}-title`} data-testid={id}>
      <h2 id={`${id}-title`}>{title}</h2>
      <DataTable
        rows={sorted}
        error={rows.error}
        onRetry={rows.reload}
        loading="Loading"
        empty={<Empty title="No calls in this range." />}
        caption={title}
        rowKey={(r) => r.group}
        columns={[
          { header: "Name", rowHeader: true, cell: (r) => label(r.group) },
          { header: "Calls", num: true, cell: (r) => fmtInt(r.calls) },
          {
            header: "Errors",
            num: true,
            cell: (r) => (
              <>
                {fmtInt(r.errors)}
                <span className="cell-sub">{percent(Number(r.errors), Number(r.calls))}</span>
              </>
            ),
          },
          { header: "Tokens", num: true, cell: (r) => fmtInt(r.total_tokens) },
          { header: "Spend", num: true, cell: (r) => fmtUsd(r.cost_nanos) },
        ]}
      />
    </section>
  );
}

/** How long each provider's upstream took, slowest first. */
function LatencySection({ rows }: { rows: ReturnType<typeof useUsage> }) {
  const sorted = rows.data
    ? [...rows.data.data].sort((a, b) => Number(b.avg_latency_ms ?? -1) - Number(a.avg_latency_ms ?? -1))
    : undefined;
  const slowest = Math.max(1, ...(sorted ?? []).map((r) => Number(r.avg_latency_ms ?? 0)));
  return (
    <section className="card section" aria-labelledby="latency-title" data-testid="latency">
      <h2 id="latency-title">Upstream latency by provider</h2>
      <DataTable
        rows={sorted}
        error={rows.error}
        onRetry={rows.reload}
        loading="Loading"
        empty={<Empty title="No calls in this range." />}
        caption="Average latency of each provider's calls"
        rowKey={(r) => r.group}
        columns={[
          { header: "Provider", rowHeader: true, cell: (r) => r.group || "none" },
          { header: "Calls", num: true, cell: (r) => fmtInt(r.calls) },
          {
            header: "Average",
            num: true,
            cell: (r) => (r.avg_latency_ms === null ? "–" : fmtMs(Math.round(Number(r.avg_latency_ms)))),
          },
          {
            header: "Compared",
            hideHeader: true,
            className: "bar-cell",
            cell: (r) => (
              // the figure is in the cell before; the bar only shows it
              <span className="bar" aria-hidden="true">
                <span style={{ width: `${((Number(r.avg_latency_ms ?? 0) / slowest) * 100).toFixed(1)}%` }} />
              </span>
            ),
          },
        ]}
      />
    </section>
  );
}
