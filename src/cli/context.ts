// What every CLI command gets: the configuration, the store, and how to print.
import type { Config } from "../config/schema.ts";
import type { Store } from "../store/db.ts";

export interface CliContext {
  config: Config;
  /** opened on first use: `config check` needs no store */
  store(): Promise<Store>;
  json: boolean;
  out(text: string): void;
}

export class UsageError extends Error {
  override name = "UsageError";
}

/** Prints one JSON document with --json, otherwise the human lines. */
export function print(ctx: CliContext, value: unknown, human: () => string): void {
  ctx.out(ctx.json ? JSON.stringify(value, null, 2) : human());
}

/** An argument that is a negative amount ("-5", "-0.5", "-$5"), not an option. */
const NEGATIVE_AMOUNT = /^-\$?(\d|\.\d)/;

/**
 * The arguments with negative amounts made plain values for parseArgs, which would otherwise
 * read "-5" as an option and refuse it as "Unknown option '-5'": the command then refuses the
 * amount with its own message ("must not be negative"). A negative amount after an option that
 * takes a value becomes that option's value (`--quota -5` as `--quota=-5`); any other goes
 * after a `--`, in its order among the positionals that follow.
 */
export function negativeAmounts(
  args: readonly string[],
  options: Readonly<Record<string, { type: "string" | "boolean" }>> = {},
): string[] {
  const end = args.indexOf("--");
  const before = end < 0 ? args : args.slice(0, end);
  const after = end < 0 ? [] : args.slice(end + 1);
  const out: string[] = [];
  const moved: string[] = [];
  for (const arg of before) {
    const last = out.at(-1);
    if (!NEGATIVE_AMOUNT.test(arg)) out.push(arg);
    else if (last?.startsWith("--") && options[last.slice(2)]?.type === "string")
      out[out.length - 1] = `${last}=${arg}`;
    else moved.push(arg);
  }
  return moved.length || end >= 0 ? [...out, "--", ...moved, ...after] : out;
}

/** "none" clears a limit; otherwise a whole number of tokens. */
export function parseTokens(
  value: string | undefined,
  flag: string,
  allowNone = false,
): number | null | undefined {
  if (value === undefined) return undefined;
  if (allowNone && value === "none") return null;
  if (/^-\d+$/.test(value)) throw new UsageError(`${flag} must not be negative`);
  if (!/^\d+$/.test(value))
    throw new UsageError(`${flag} must be a whole number of tokens${allowNone ? ' or "none"' : ""}`);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new UsageError(`${flag} is too large`);
  return n;
}

export function parseBool(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === "true") return true;
  if (value === "false") return false;
  throw new UsageError(`${flag} must be true or false`);
}
