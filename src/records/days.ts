// The console's day boundary is the UTC day: "today" starts at 00:00 UTC for everyone, so a
// record belongs to the same day in every view, chart, export and retention run.

export const DAY_MS = 86_400_000;

/** Midnight UTC at the start of the day holding `ms`. */
export function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** Cached names: the records of a batch or a page share a day or two. */
const dayNames = new Map<number, string>();

/** The UTC day of a time, YYYY-MM-DD. */
export function utcDay(ms: number): string {
  const n = Math.floor(ms / DAY_MS);
  let name = dayNames.get(n);
  if (name === undefined) {
    if (dayNames.size > 1000) dayNames.clear();
    name = new Date(n * DAY_MS).toISOString().slice(0, 10);
    dayNames.set(n, name);
  }
  return name;
}

/** Start of the oldest of the last `days` UTC days, today included: the "last year" window. */
export function windowStart(now: number, days: number): number {
  return startOfUtcDay(now) - (days - 1) * DAY_MS;
}
