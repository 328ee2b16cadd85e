// What the admin API's usage aggregates group calls by (GET /admin/v1/usage). A module of its
// own, importing nothing, because the console's dashboard reads the list too.

export const USAGE_GROUPS = ["model", "provider", "account", "key", "day", "hour", "status"] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];
