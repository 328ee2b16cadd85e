// The console API's shapes, as the server defines them (src/http/routes/console/views.ts):
// imported as types, so the bundle gets none of the server's code. The values, the lists the
// forms and filters offer, come from modules that import nothing.

export { ROLES } from "../../src/accounts/roles.ts";
export type {
  AccountAnswer,
  AccountView,
  AdminKeyAnswer,
  AdminKeyView,
  BudgetPeriod,
  BudgetView,
  CallRecordView,
  CallStatus,
  DailyRow,
  KeyAnswer,
  KeyCreated,
  KeyView,
  List,
  MeAnswer,
  MessageAnswer,
  ModelView,
  NewTicketBody,
  OverviewAnswer,
  PlansAnswer,
  PlanView,
  RateWindow,
  RecordsAnswer,
  Role,
  TicketAnswer,
  TicketKind,
  TicketMessageView,
  TicketStatus,
  TicketThread,
  TicketView,
  UserAnswer,
  UserView,
} from "../../src/http/routes/console/views.ts";
export { BUDGET_PERIODS } from "../../src/prices/period.ts";
export { CALL_STATUSES } from "../../src/records/outcomes.ts";
export { TICKET_STATUSES } from "../../src/tickets/kinds.ts";
