// What a ticket is about and where it stands. A module of its own, importing nothing, because
// the console (console/src) reads these lists too, through the console API's view types.

export const TICKET_KINDS = ["problem", "plan_upgrade", "older_history", "extra_export"] as const;
export type TicketKind = (typeof TICKET_KINDS)[number];
export const TICKET_STATUSES = ["open", "answered", "closed"] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];
