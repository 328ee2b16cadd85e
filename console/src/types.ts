// The console API's shapes, as the server defines them (src/views/console.ts):
// imported as types, so the bundle gets none of the server's code. The values, the lists the
// forms and filters offer, come from modules that import nothing.

export { ROLES } from "../../src/accounts/roles.ts";
export { API_NAMES } from "../../src/domain/api-names.ts";
export { CALL_STATUSES } from "../../src/domain/outcomes.ts";
export { TICKET_STATUSES } from "../../src/domain/ticket-kinds.ts";
export { BUDGET_PERIODS } from "../../src/prices/period.ts";
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
  SessionCallsAnswer,
  SessionClient,
  SessionsAnswer,
  SessionView,
  TicketAnswer,
  TicketKind,
  TicketMessageView,
  TicketStatus,
  TicketThread,
  TicketView,
  UserAnswer,
  UserView,
} from "../../src/views/console.ts";
