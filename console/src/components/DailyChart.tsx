// Daily consumption over the last 30 UTC days as stacked bars, in plain SVG: tokens, or what
// they cost. The same numbers are available as a table below the chart, for keyboard and
// screen reader users. The bars themselves (StackedBars) also draw the operators' dashboard.
import { type ReactNode, useEffect, useId, useMemo, useRef, useState } from "react";
import {
  fmtCompact,
  fmtDayLong,
  fmtDayShort,
  fmtInt,
  fmtUsd,
  fmtUsdCompact,
  keyLabel,
  lastUtcDays,
} from "../format.ts";
import type { DailyRow } from "../types.ts";
import { DataTable } from "./DataTable.tsx";

export type ChartGroup = "key" | "model";
/** what the bars measure: tokens, or their cost (integer nanodollars, so sums stay exact) */
export type ChartMeasure = "tokens" | "cost";

const MEASURES: Record<
  ChartMeasure,
  { of: (row: DailyRow) => number; fmt: (v: number) => string; axis: (v: number) => string; unit: string }
> = {
  tokens: {
    of: (row) => Number(row.tokens),
    fmt: (v) => `${fmtInt(v)} tokens`,
    axis: fmtCompact,
    unit: "Tokens",
  },
  cost: { of: (row) => Number(row.cost_nanos), fmt: fmtUsd, axis: fmtUsdCompact, unit: "Cost" },
};

const COLORS = ["#2f5d8a", "#e07b39", "#3a9d8f", "#c44e6b", "#8a6fbf", "#b3a12f"];
const OTHER_COLOR = "#a3abb8";
/** more series than this are summed into "Other", so colours stay distinguishable */
const MAX_SERIES = COLORS.length;

/** One stacked series of a bar chart: its amount in each bucket (a day, an hour). */
export interface BarSeries {
  id: string;
  label: string;
  color: string;
  byBucket: Map<string, number>;
  total: number;
}

/**
 * The largest series first, each its colour; past the colours the smallest are summed into
 * one "N others", so colours stay distinguishable. An `otherId` series given (the rest of a
 * total that was split into its largest parts) is kept last, in the others' colour.
 */
export function colourSeries(all: Omit<BarSeries, "color">[], otherId = "(other)"): BarSeries[] {
  const given = all.find((s) => s.id === otherId);
  const sorted = all.filter((s) => s !== given).sort((a, b) => b.total - a.total);
  const room = sorted.length > MAX_SERIES || given ? MAX_SERIES - 1 : MAX_SERIES;
  const top: BarSeries[] = sorted.slice(0, room).map((s, i) => ({ ...s, color: COLORS[i]! }));
  const rest = sorted.slice(top.length);
  if (rest.length > 0 || given) {
    const other: BarSeries = {
      id: otherId,
      label: given?.label ?? `${rest.length} others`,
      color: OTHER_COLOR,
      byBucket: new Map(given?.byBucket),
      total: given?.total ?? 0,
    };
    for (const s of rest) {
      for (const [bucket, value] of s.byBucket)
        other.byBucket.set(bucket, (other.byBucket.get(bucket) ?? 0) + value);
      other.total += s.total;
    }
    if (given && rest.length > 0) other.label = `${given.label} and ${rest.length} more`;
    if (other.total > 0 || other.byBucket.size > 0) top.push(other);
  }
  return top;
}

function seriesOf(rows: DailyRow[], group: ChartGroup, measure: ChartMeasure): BarSeries[] {
  const amount = MEASURES[measure].of;
  const all = new Map<string, Omit<BarSeries, "color">>();
  for (const row of rows) {
    const id = group === "key" ? row.key_id || "(none)" : row.model || "(none)";
    const label =
      group === "key"
        ? row.key_id
          ? keyLabel(row.key_prefix, row.key_name)
          : "no key"
        : row.model || "no model";
    let s = all.get(id);
    if (!s) {
      s = { id, label, byBucket: new Map(), total: 0 };
      all.set(id, s);
    }
    s.byBucket.set(row.day, (s.byBucket.get(row.day) ?? 0) + amount(row));
    s.total += amount(row);
  }
  return colourSeries([...all.values()]);
}

/** 0, and a round maximum (1, 2 or 5 times a power of ten) at or above `max` */
function niceMax(max: number): number {
  if (max <= 0) return 10;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

const PAD = { left: 52, right: 18, top: 12, bottom: 28 };

export function DailyChart({
  rows,
  group,
  measure = "tokens",
  days = 30,
}: {
  rows: DailyRow[];
  group: ChartGroup;
  measure?: ChartMeasure;
  days?: number;
}) {
  const m = MEASURES[measure];
  const dayList = useMemo(() => lastUtcDays(days), [days]);
  const series = useMemo(() => seriesOf(rows, group, measure), [rows, group, measure]);
  return (
    <StackedBars
      buckets={dayList}
      series={series}
      fmt={m.fmt}
      axis={m.axis}
      describe={(total) => `${m.unit} per UTC day over the last ${days} days by ${group}: ${total} in total.`}
      bucketShort={fmtDayShort}
      bucketTitle={(day) => `${fmtDayShort(day)} (UTC)`}
      legendLabel={`Chart legend, by ${group}`}
      table={
        <DataTable
          rows={[...rows].sort((a, b) => (a.day < b.day ? 1 : a.day > b.day ? -1 : 0))}
          rowKey={(row) => `${row.day}|${row.key_id}|${row.model}`}
          columns={[
            { header: "Day (UTC)", cell: (row) => fmtDayLong(row.day) },
            {
              header: "Key",
              cell: (row) => (row.key_id ? keyLabel(row.key_prefix, row.key_name) : "no key"),
            },
            { header: "Model", cell: (row) => row.model || "no model" },
            { header: "Tokens", num: true, cell: (row) => fmtInt(row.tokens) },
            { header: "Cost", num: true, cell: (row) => fmtUsd(row.cost_nanos) },
            { header: "Calls", num: true, cell: (row) => fmtInt(row.calls) },
          ]}
        />
      }
    />
  );
}

/**
 * Stacked bars over a row of buckets (the overview's days; the operators' days or hours), with
 * the legend and, for keyboard and screen reader users, the numbers as a table.
 */
export function StackedBars({
  buckets,
  series,
  fmt,
  axis,
  describe,
  bucketShort,
  bucketTitle,
  legendLabel,
  table,
}: {
  /** the x axis, oldest first */
  buckets: readonly string[];
  series: readonly BarSeries[];
  /** an amount in full, and on the axis */
  fmt: (v: number) => string;
  axis: (v: number) => string;
  /** the chart's title for screen readers, from the grand total (formatted) */
  describe: (total: string) => string;
  /** a bucket under its bar, and in a bar's tooltip */
  bucketShort: (bucket: string) => string;
  bucketTitle: (bucket: string) => string;
  legendLabel: string;
  /** the same numbers as a table, shown on request */
  table: ReactNode;
}) {
  const titleId = useId();
  const figure = useRef<HTMLElement>(null);
  // drawn in the figure's own pixels, so the type keeps its size on a phone
  const [W, setW] = useState(720);
  useEffect(() => {
    const element = figure.current;
    if (!element) return;
    const observer = new ResizeObserver(([entry]) => {
      if (entry) setW(Math.max(280, Math.floor(entry.contentRect.width)));
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  const H = W < 500 ? 220 : 260;
  // about six labels on the axis (three on a phone): every 5th of 30 days, every 4th of 24 hours
  const labelEvery = Math.max(1, Math.ceil(buckets.length / (W < 500 ? 3 : 6)));
  const totals = buckets.map((b) => series.reduce((sum, s) => sum + (s.byBucket.get(b) ?? 0), 0));
  const top = niceMax(Math.max(0, ...totals));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(1, buckets.length);
  const barW = Math.max(2, slot * 0.7);
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * top);
  const grandTotal = totals.reduce((a, b) => a + b, 0);

  return (
    <figure className="chart" ref={figure}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={titleId} preserveAspectRatio="xMidYMid meet">
        <title id={titleId}>{describe(fmt(grandTotal))}</title>
        {ticks.map((t) => (
          <g key={t}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} className="chart-grid" />
            <text x={PAD.left - 6} y={y(t) + 4} textAnchor="end" className="chart-axis">
              {axis(t)}
            </text>
          </g>
        ))}
        {buckets.map((bucket, i) => {
          let base = 0;
          const x = PAD.left + i * slot + (slot - barW) / 2;
          return (
            <g key={bucket}>
              {series.map((s) => {
                const v = s.byBucket.get(bucket) ?? 0;
                if (v <= 0) return null;
                const y0 = y(base);
                base += v;
                const y1 = y(base);
                return (
                  <rect key={s.id} x={x} y={y1} width={barW} height={Math.max(1, y0 - y1)} fill={s.color}>
                    <title>{`${bucketTitle(bucket)} · ${s.label}: ${fmt(v)}`}</title>
                  </rect>
                );
              })}
              {i % labelEvery === (buckets.length - 1) % labelEvery && (
                <text x={PAD.left + i * slot + slot / 2} y={H - 8} textAnchor="middle" className="chart-axis">
                  {bucketShort(bucket)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul className="legend" aria-label={legendLabel}>
          {series.map((s) => (
            <li key={s.id}>
              <span className="swatch" style={{ background: s.color }} aria-hidden="true" />
              <span className="legend-label">{s.label}</span>
              <span className="muted"> {fmt(s.total)}</span>
            </li>
          ))}
        </ul>
        <details className="chart-table">
          <summary>Show the numbers as a table</summary>
          {table}
        </details>
      </figcaption>
    </figure>
  );
}
