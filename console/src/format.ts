// How numbers and times read in the console: thousands separators, the browser's own time
// zone, and UTC days where the contract counts in them; dollars from the API's nanodollars;
// and token counts and dollar amounts as typed in forms.
import { formatUsd, parseUsd, UsdInputError } from "../../src/prices/usd.ts";

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const compactUsd = new Intl.NumberFormat(undefined, { notation: "compact", maximumSignificantDigits: 3 });
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });
const shortDateTime = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "numeric",
  minute: "2-digit",
  second: "2-digit",
});
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });
const dayShort = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
const dayLong = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });

export const fmtInt = (n: number | null | undefined): string =>
  n === null || n === undefined || !Number.isFinite(Number(n)) ? "–" : integer.format(Number(n));

/**
 * Nanodollars as dollars, exactly and with at least cents: "$1,234.50", "$0.00007" (a call
 * often costs less than a cent). The same digits the CLI prints (src/prices/usd.ts).
 */
export function fmtUsd(nanos: number | null | undefined): string {
  if (nanos === null || nanos === undefined || !Number.isFinite(Number(nanos))) return "–";
  const [whole = "0", frac = ""] = formatUsd(Number(nanos)).split(".");
  return `$${integer.format(Number(whole))}.${frac.padEnd(2, "0")}`;
}

/** for chart axes in dollars: $0.0012, $3.5K (rounded: the exact figures are in the table) */
export const fmtUsdCompact = (nanos: number): string => `$${compactUsd.format(nanos / 1e9)}`;

/** for chart axes: 12K, 1.5M */
export const fmtCompact = (n: number): string => compact.format(n);

export const fmtDateTime = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? "–" : dateTime.format(new Date(ms));

export const fmtTime = (ms: number): string => timeOnly.format(new Date(ms));

/** "Nov 22, 4:14:58 PM": for tables, where the year is rarely in doubt */
export const fmtShortDateTime = (ms: number): string => shortDateTime.format(new Date(ms));

export const fmtDate = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? "–" : dateOnly.format(new Date(ms));

/** "2025-03-04" (a UTC day) as "Mar 4" */
export const fmtDayShort = (day: string): string => dayShort.format(new Date(`${day}T00:00:00Z`));
export const fmtDayLong = (day: string): string => dayLong.format(new Date(`${day}T00:00:00Z`));

export const fmtMs = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? "–" : `${integer.format(ms)} ms`;

/** The browser's time zone name, e.g. "Europe/Berlin". */
export const timeZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";

/** The current UTC day as YYYY-MM-DD. */
export const utcToday = (now = Date.now()): string => new Date(now).toISOString().slice(0, 10);

/** When the current UTC day began, in local time ("01:00"). */
export function utcDayStartLocal(now = Date.now()): string {
  const start = Date.parse(`${utcToday(now)}T00:00:00Z`);
  return new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" }).format(new Date(start));
}

/** The last `n` UTC days, oldest first, ending today. */
export function lastUtcDays(n: number, now = Date.now()): string[] {
  const today = Date.parse(`${utcToday(now)}T00:00:00Z`);
  return Array.from({ length: n }, (_, i) =>
    new Date(today - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

/** A value for <input type="datetime-local"> from Unix ms, in local time. */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** Unix ms from <input type="datetime-local">'s value (local time), or undefined when empty. */
export function fromLocalInput(value: string): number | undefined {
  if (!value) return undefined;
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * A token count typed into a form (a quota, a key's limit): a whole number, with or without
 * separators ("1,000,000", "1 000 000", "1_000_000"). Empty is null: none of its own.
 */
export function parseTokenCount(text: string): number | null | "invalid" {
  const digits = text.replaceAll(/[\s,_]/g, "");
  if (digits === "") return null;
  return /^\d+$/.test(digits) ? Number(digits) : "invalid";
}

/**
 * A dollar amount typed into a form (a budget): "25", "0.50", "$5", at most 9 decimals, in
 * nanodollars. Empty is null: no budget. Anything else throws the reason, for the form.
 */
export function parseUsdAmount(text: string, what: string): number | null {
  if (text.trim() === "") return null;
  try {
    return parseUsd(text);
  } catch (err) {
    if (err instanceof UsdInputError) throw new Error(`${what} ${err.message}; leave it empty for none.`);
    throw err;
  }
}

/** An amount as a form shows it for editing: exact dollars, no "$" or separators ("25", "0.5"). */
export const usdInputValue = (nanos: number): string => formatUsd(nanos);

/**
 * When a monthly budget resets (Unix ms, always 00:00 UTC on the 1st): "Dec 1, 2026, 00:00 UTC",
 * or for a table cell only the (UTC) day.
 */
export const fmtResets = (ms: number, time = true): string =>
  `${fmtDayLong(new Date(ms).toISOString().slice(0, 10))}${time ? ", 00:00 UTC" : ""}`;

export const keyLabel = (prefix: string | null | undefined, name: string | null | undefined): string =>
  prefix ? `${prefix}…${name ? ` ${name}` : ""}` : "no key";

/** Record params (parsed JSON) or ticket params (text) as readable text. */
export function paramsText(params: unknown): string {
  if (params === null || params === undefined || params === "") return "";
  if (typeof params === "string") return params;
  return JSON.stringify(params);
}

const perMillion = new Intl.NumberFormat(undefined, {
  style: "currency",
  currency: "USD",
  minimumFractionDigits: 2,
  maximumFractionDigits: 6,
});

/** A configured price, USD per million tokens as the catalog writes it: "$2.50", "$0.075". */
export const fmtPrice = (usd: number | null | undefined): string =>
  typeof usd === "number" && Number.isFinite(usd) ? perMillion.format(usd) : "–";
