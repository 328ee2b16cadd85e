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

/** "none" clears a limit; otherwise a whole number of tokens. */
export function parseTokens(
  value: string | undefined,
  flag: string,
  allowNone = false,
): number | null | undefined {
  if (value === undefined) return undefined;
  if (allowNone && value === "none") return null;
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
