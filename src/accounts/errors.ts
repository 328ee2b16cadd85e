// What the store functions of accounts, keys and users refuse with. A LookupError's message
// is written for the operator: the CLI prints it as is and the console answers it.

export class LookupError extends Error {
  override name = "LookupError";
}

/** PostgreSQL's 23505 or SQLite's UNIQUE constraint failure. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  return (
    e?.code === "23505" || (typeof e?.message === "string" && e.message.includes("UNIQUE constraint failed"))
  );
}
