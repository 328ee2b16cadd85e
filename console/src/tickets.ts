// What a new ticket starts from: a call record ("Report a problem"), a plan to upgrade to, or
// a request for older history or an extra export. Passed to /tickets/new in history state.
import { paramsText } from "./format.ts";
import type { CallRecordView, NewTicketBody, TicketKind, TicketStatus } from "./types.ts";

export interface TicketDraft extends Partial<Omit<NewTicketBody, "params">> {
  /** as text in the form */
  params?: string;
  /** shown above the form: where the prefilled fields came from */
  source?: string;
  key_label?: string;
}

export const KIND_LABELS: Record<TicketKind, string> = {
  problem: "Problem",
  plan_upgrade: "Plan upgrade",
  older_history: "Older history",
  extra_export: "Extra export",
};

export const STATUS_LABELS: Record<TicketStatus, string> = {
  open: "Open",
  answered: "Answered",
  closed: "Closed",
};

/** The error a record returned, as support needs it: status, HTTP status, error code. */
export function recordError(record: CallRecordView): string {
  if (record.status === "ok") return "";
  return [record.status, `HTTP ${record.http_status}`, record.error_code].filter(Boolean).join(" · ");
}

export function draftFromRecord(record: CallRecordView): TicketDraft {
  const what = record.status === "ok" ? "Call" : (record.error_code ?? record.status);
  return {
    kind: "problem",
    subject: `${what} on ${record.model ?? "a call"} (${record.request_id})`.slice(0, 200),
    description: "",
    problem_at: record.created_at,
    key_id: record.key_id ?? undefined,
    key_label: record.key_prefix
      ? `${record.key_prefix}…${record.key_name ? ` ${record.key_name}` : ""}`
      : undefined,
    model: record.model ?? undefined,
    params: paramsText(record.params) || undefined,
    error: recordError(record) || undefined,
    request_id: record.request_id,
    source: `call record ${record.request_id}`,
  };
}
