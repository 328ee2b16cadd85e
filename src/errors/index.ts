export { type CatalogEntry, catalog, type ErrorName } from "./catalog.ts";
export { type ErrorBody, GatewayError } from "./gateway-error.ts";
export { fromUpstream } from "./upstream.ts";
