// Dollars as people read and type them, from and to the integer nanodollars (1e-9 USD) the
// store keeps. It imports nothing, so the web console uses the same formatter and parser as
// the server (console/src/format.ts) and shows exactly what the CLI prints.

/**
 * The largest amount a budget may be: $9,000,000. Counters of nanodollars stay exact integers
 * in a double up to 2^53 (about $9.007 million); a budget must fit with room for the spending
 * added to it.
 */
export const MAX_BUDGET_NANOS = 9_000_000 * 1e9;

/** Nanodollars as a decimal number of dollars, for headers, the CLI's JSON and exports. */
export function usd(nanodollars: number): number {
  // One correctly rounded division: the nearest double to the exact decimal, which prints as
  // that decimal (at most 9 decimals) for any amount below $1,000,000 (15 significant digits).
  return nanodollars / 1e9;
}

/** Nanodollars as a dollar figure for people: exact, without trailing zeros ("0.0325", "5"). */
export function formatUsd(nanodollars: number): string {
  const sign = nanodollars < 0 ? "-" : "";
  const n = Math.abs(Math.round(nanodollars));
  const whole = Math.floor(n / 1e9);
  const frac = String(n % 1e9)
    .padStart(9, "0")
    .replace(/0+$/, "");
  return `${sign}${whole}${frac ? `.${frac}` : ""}`;
}

/** Why a typed dollar amount was refused; the message reads after the field's name. */
export class UsdInputError extends Error {
  override name = "UsdInputError";
}

/**
 * A dollar amount as typed ("25", "0.50", "$5", "0.000001") in nanodollars, exactly: digits,
 * an optional point and at most 9 decimals (a nanodollar), never negative, at most
 * MAX_BUDGET_NANOS. No thousands separators: "2,50" means $2.50 in half the world.
 */
export function parseUsd(text: string): number {
  const m = /^\$?(\d*)(?:\.(\d*))?$/.exec(text.trim());
  if (!m || !`${m[1]}${m[2] ?? ""}`) {
    if (/^-\s*\$?\s*[\d.]/.test(text.trim())) throw new UsdInputError("must not be negative");
    throw new UsdInputError('must be an amount of dollars such as 25 or 0.50 (digits and a ".")');
  }
  const whole = m[1] || "0";
  const frac = m[2] ?? "";
  if (frac.length > 9)
    throw new UsdInputError("has more than 9 decimals (the smallest unit is $0.000000001)");
  const nanos = Number(whole) * 1e9 + Number(frac.padEnd(9, "0"));
  if (!(nanos <= MAX_BUDGET_NANOS)) throw new UsdInputError(`must be at most ${formatUsd(MAX_BUDGET_NANOS)}`);
  return nanos;
}
