// What an audit entry changed: its resource's before and after, compared field by field down
// to the leaves, so an edit of one price of a model shows as `pricing.input`, not as two
// whole entries to compare by eye.
import { deepEqual, isPlainObject } from "./json.ts";

export interface Change {
  /** "pricing.input", "deployments[1].weight"; "" for the value as a whole */
  path: string;
  kind: "added" | "removed" | "changed";
  /** undefined: the field was not there */
  before: unknown;
  after: unknown;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/**
 * The leaves that differ, in the order of the fields (before's, then those only after has).
 * A created resource (before null) lists every field added, down to its leaves; a deleted one
 * every field removed.
 */
export function diffJson(before: unknown, after: unknown, path = ""): Change[] {
  if (deepEqual(before, after)) return [];
  if (path === "") {
    // a resource created or deleted: its fields, not one "null to object" change
    if ((before === null || before === undefined) && isPlainObject(after)) return diffJson({}, after, "");
    if ((after === null || after === undefined) && isPlainObject(before)) return diffJson(before, {}, "");
  }
  // a whole object added or removed: its leaves, each added or removed
  if (before === undefined && isPlainObject(after) && Object.keys(after).length > 0) before = {};
  if (after === undefined && isPlainObject(before) && Object.keys(before).length > 0) after = {};
  if (isPlainObject(before) && isPlainObject(after)) {
    const keys = [...Object.keys(before), ...Object.keys(after).filter((k) => !(k in before))];
    return keys.flatMap((k) => diffJson(before[k], after[k], join(path, k)));
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const length = Math.max(before.length, after.length);
    return Array.from({ length }, (_, i) => diffJson(before[i], after[i], `${path}[${i}]`)).flat();
  }
  const kind = before === undefined ? "added" : after === undefined ? "removed" : "changed";
  return [{ path, kind, before, after }];
}

/** A value of a change as one line: JSON, or "–" for a field that was not there. */
export function showValue(value: unknown): string {
  if (value === undefined) return "–";
  return typeof value === "string" ? value : JSON.stringify(value);
}
