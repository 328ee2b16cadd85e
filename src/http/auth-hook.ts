// Authenticates /v1 requests before their body is read, so an unauthenticated client cannot
// make the gateway read or parse anything. Spec 3 and 5: a key that does not exist, is
// disabled, or is over its limit is refused; so is a key of a disabled or exhausted account.
import type { FastifyRequest } from "fastify";
import { looksLikeKey } from "../accounts/key-format.ts";
import type { ClientEdge } from "../apis/types.ts";
import { GatewayError } from "../errors/index.ts";
import type { GatewayDeps } from "./deps.ts";

export function authHook(deps: GatewayDeps) {
  /** `api`: the client API of the route, which says where its key travels */
  return async function authenticate(request: FastifyRequest, api: ClientEdge): Promise<void> {
    const bearer = api.credential(request.headers, request.url);
    if (bearer.kind === "missing") throw new GatewayError("missing_api_key", { message: api.missingKey });
    if (!looksLikeKey(bearer.token)) throw new GatewayError("invalid_api_key");
    const found = await deps.keys.resolve(bearer.token);
    if (!found) throw new GatewayError("invalid_api_key");
    const { key, account } = found;
    if (request.call) {
      request.call.accountId = account.id;
      request.call.keyId = key.id;
    }
    if (key.disabled) throw new GatewayError("key_disabled");
    if (account.disabled) throw new GatewayError("account_disabled");
    // Both figures are consumption as some moment saw it (the ledger's view, the key as last
    // loaded); the larger is the later. Refusing here spares reading the body; the hold decides.
    if (
      key.limit_tokens !== null &&
      Math.max(deps.ledger.key(key.id)?.used ?? 0, key.used_tokens) >= key.limit_tokens
    )
      throw new GatewayError("key_limit_exceeded");
    const quota = account.quota_tokens ?? deps.registry.plans.get(account.plan_id)?.quota_tokens ?? 0;
    if (Math.max(deps.ledger.account(account.id)?.used ?? 0, account.used_tokens) >= quota)
      throw new GatewayError("quota_exceeded");
    request.auth = found;
  };
}
