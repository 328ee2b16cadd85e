// One call's record, as the store keeps it (call_records) and as the journal writes it a line
// each: its own module, so the draft that builds it, the journal and the writer share the type
// without importing each other.
import type { CallRecordsTable } from "../store/schema.ts";

export type CallRecord = CallRecordsTable;
