// How a call ended: the statuses a call record can carry and the outcomes that set them.
// One list, read by the record writer, the store schema, the console API and the console.

export const CALL_STATUSES = [
  "ok",
  "error",
  "client_disconnect",
  "upstream_error",
  "content_filter",
] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];

/** What the one finishing function writes into a record: status, HTTP status, error code. */
export interface CallOutcome {
  status: CallStatus;
  httpStatus: number;
  errorCode?: string | null;
}

/** The client went away: 499 is nginx's "client closed request". */
export const CLIENT_GONE: CallOutcome = {
  status: "client_disconnect",
  httpStatus: 499,
  errorCode: "client_disconnect",
};
/** The answer reached the client whole. */
export const ANSWERED: CallOutcome = { status: "ok", httpStatus: 200 };
/** Content safety withheld the model's output; the client got a 200 with the notice. */
export const WITHHELD: CallOutcome = {
  status: "content_filter",
  httpStatus: 200,
  errorCode: "content_filter",
};
