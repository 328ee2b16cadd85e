// What an admin token may do (src/accounts/admin-tokens.ts). A module of its own, importing
// nothing, because the console reads the list too, through the admin API's view types.
//   read:    every GET
//   keys:    read, and changes to accounts, keys, users and tickets
//   catalog: read, and changes to providers, models and plans
//   full:    everything, admin tokens included

export const ADMIN_SCOPES = ["read", "keys", "catalog", "full"] as const;
export type AdminScope = (typeof ADMIN_SCOPES)[number];
