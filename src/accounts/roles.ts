// What a console user may do, weakest first. A module of its own, importing nothing, because the
// console (console/src) reads the list too, through the console API's view types.

export const ROLES = ["member", "owner", "admin"] as const;
export type Role = (typeof ROLES)[number];
