// A list entry tagged by `type` (a content block, a tool, an input item), read as the API
// will be tomorrow: an entry of a type the gateway reads is checked with that type's schema,
// and one of a type it does not know passes as it is, for an upstream of the same API to
// take natively (src/providers/passthrough.ts). A discriminated union would refuse the
// unknown type, and a plain union name the wrong branch's problem for a known one.
import { z } from "zod";

/** An entry of a type the gateway does not read. */
export type OtherEntry = { type: string; [k: string]: unknown };

/** The schema of a typed entry: `schemas[type]` for the types it names, any object with a type else. */
export function typedEntry<S extends Record<string, z.ZodType>>(schemas: S) {
  return z.looseObject({ type: z.string().min(1).max(128) }).transform((entry, ctx) => {
    const schema = Object.hasOwn(schemas, entry.type) ? schemas[entry.type] : undefined;
    if (!schema) return entry as OtherEntry as z.output<S[keyof S]> | OtherEntry;
    const checked = schema.safeParse(entry);
    if (checked.success) return checked.data as z.output<S[keyof S]> | OtherEntry;
    // the type's own issues, codes kept: the edges word a missing field by its code
    for (const issue of checked.error.issues) ctx.addIssue(issue as z.core.$ZodRawIssue);
    return z.NEVER;
  });
}
