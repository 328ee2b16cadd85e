// Statements PostgreSQL prepares once per connection: the texts the hot path sends on every call
// or batch. Kysely sends every query unnamed, so the server parses and plans each execution;
// a pool connection sends the texts marked here under a name of their own instead.
import type pg from "pg";

/** SQL texts sent on every call's path, and the name each is prepared under. */
const preparedNames = new Map<string, string>();

/**
 * Marks a statement's text as one to prepare on PostgreSQL: each connection parses and plans it
 * once (pg's named statements), not on every execution. That saved about 30 µs of the server's
 * CPU per execution of the record writer's batch and of a hold's journal row (bench/README.md).
 * Returns the text, unchanged, to send as usual.
 */
export function prepared(text: string): string {
  if (!preparedNames.has(text)) preparedNames.set(text, `gw_${preparedNames.size + 1}`);
  return text;
}

/** A pool connection sends the texts marked by prepared() as named statements. */
export function prepareMarked(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (first: unknown, ...rest: unknown[]) => {
    const name = typeof first === "string" ? preparedNames.get(first) : undefined;
    if (name === undefined || typeof rest[0] === "function") return query(first, ...rest);
    return query({ name, text: first, values: rest[0] }, ...rest.slice(1));
  };
}
