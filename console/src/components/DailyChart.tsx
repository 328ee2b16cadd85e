// Daily consumption over the last 30 UTC days as stacked bars, in plain SVG: tokens, or what
// they cost. The same numbers are available as a table below the chart, for keyboard and
// screen reader users.
import { useEffect, useId, useMemo, useRef, useState } from "react";
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

interface Series {
  id: string;
  label: string;
  color: string;
  byDay: Map<string, number>;
  total: number;
}

function seriesOf(rows: DailyRow[], group: ChartGroup, measure: ChartMeasure): Series[] {
  const amount = MEASURES[measure].of;
  const all = new Map<string, Series>();
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
      s = { id, label, color: OTHER_COLOR, byDay: new Map(), total: 0 };
      all.set(id, s);
    }
    s.byDay.set(row.day, (s.byDay.get(row.day) ?? 0) + amount(row));
    s.total += amount(row);
  }
  const sorted = [...all.values()].sort((a, b) => b.total - a.total);
  const top = sorted.slice(0, sorted.length > MAX_SERIES ? MAX_SERIES - 1 : MAX_SERIES);
  top.forEach((s, i) => {
    s.color = COLORS[i]!;
  });
  const rest = sorted.slice(top.length);
  if (rest.length > 0) {
    const other: Series = {
      id: "(other)",
      label: `${rest.length} others`,
      color: OTHER_COLOR,
      byDay: new Map(),
      total: 0,
    };
    for (const s of rest) {
      for (const [day, value] of s.byDay) other.byDay.set(day, (other.byDay.get(day) ?? 0) + value);
      other.total += s.total;
    }
    top.push(other);
  }
  return top;
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
  const labelEvery = W < 500 ? 10 : 5;
  const dayList = useMemo(() => lastUtcDays(days), [days]);
  const series = useMemo(() => seriesOf(rows, group, measure), [rows, group, measure]);
  const totals = dayList.map((day) => series.reduce((sum, s) => sum + (s.byDay.get(day) ?? 0), 0));
  const top = niceMax(Math.max(0, ...totals));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / dayList.length;
  const barW = Math.max(2, slot * 0.7);
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * top);
  const grandTotal = totals.reduce((a, b) => a + b, 0);

  return (
    <figure className="chart" ref={figure}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={titleId} preserveAspectRatio="xMidYMid meet">
        <title id={titleId}>
          {`${m.unit} per UTC day over the last ${days} days by ${group}: ${m.fmt(grandTotal)} in total.`}
        </title>
        {ticks.map((t) => (
          <g key={t}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} className="chart-grid" />
            <text x={PAD.left - 6} y={y(t) + 4} textAnchor="end" className="chart-axis">
              {m.axis(t)}
            </text>
          </g>
        ))}
        {dayList.map((day, i) => {
          let base = 0;
          const x = PAD.left + i * slot + (slot - barW) / 2;
          return (
            <g key={day}>
              {series.map((s) => {
                const v = s.byDay.get(day) ?? 0;
                if (v <= 0) return null;
                const y0 = y(base);
                base += v;
                const y1 = y(base);
                return (
                  <rect key={s.id} x={x} y={y1} width={barW} height={Math.max(1, y0 - y1)} fill={s.color}>
                    <title>{`${fmtDayShort(day)} (UTC) · ${s.label}: ${m.fmt(v)}`}</title>
                  </rect>
                );
              })}
              {i % labelEvery === (dayList.length - 1) % labelEvery && (
                <text x={PAD.left + i * slot + slot / 2} y={H - 8} textAnchor="middle" className="chart-axis">
                  {fmtDayShort(day)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul className="legend" aria-label={`Chart legend, by ${group}`}>
          {series.map((s) => (
            <li key={s.id}>
              <span className="swatch" style={{ background: s.color }} aria-hidden="true" />
              <span className="legend-label">{s.label}</span>
              <span className="muted"> {m.fmt(s.total)}</span>
            </li>
          ))}
        </ul>
        <details className="chart-table">
          <summary>Show the numbers as a table</summary>
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
        </details>
      </figcaption>
    </figure>
  );
}
