// The error catalog: every condition the gateway answers with an error, one entry each.
// The error table of docs/errors.md is generated from this list and a test keeps the two in
// step (`npm run docs:errors` rewrites the table). Statuses follow what the OpenAI SDKs map to
// typed exceptions; `type` and `code` are stable: clients and log searches depend on them.

export interface CatalogEntry {
  status: number;
  type: string;
  code: string;
  /** default message; callers may give a more specific one */
  message: string;
  /** when it happens, for the table of docs/errors.md */
  when: string;
  /**
   * What a client should do about retrying, for the SDKs that retry 429s and 5xx on their
   * own: "never" sends `x-should-retry: false` (the same request cannot succeed until
   * something changes); a number sends `retry-after` with those seconds (unless the error
   * carries its own).
   */
  retry?: "never" | number;
}

const entry = (
  status: number,
  type: string,
  code: string,
  message: string,
  when: string,
  retry?: CatalogEntry["retry"],
): CatalogEntry =>
  retry === undefined ? { status, type, code, message, when } : { status, type, code, message, when, retry };

export const catalog = {
  missing_api_key: entry(
    401,
    "authentication_error",
    "missing_api_key",
    "No API key provided. Send it as the header 'Authorization: Bearer sk-...'.",
    "no Authorization header, or one that is not `Bearer sk-…` (`POST /v1/messages`: nor an `x-api-key` header; the Gemini API: nor an `x-goog-api-key` header or a `key` query parameter)",
  ),
  invalid_api_key: entry(
    401,
    "authentication_error",
    "invalid_api_key",
    "Incorrect API key provided.",
    "the key does not exist",
  ),
  key_disabled: entry(
    403,
    "permission_error",
    "key_disabled",
    "This API key has been disabled.",
    "the key exists but is disabled",
  ),
  account_disabled: entry(
    403,
    "permission_error",
    "account_disabled",
    "The account this API key belongs to has been disabled.",
    "the key's account is disabled",
  ),
  key_limit_exceeded: entry(
    429,
    "insufficient_quota",
    "key_limit_exceeded",
    "This API key has reached its token limit.",
    "the key's token limit cannot cover the request",
    "never",
  ),
  quota_exceeded: entry(
    429,
    "insufficient_quota",
    "insufficient_quota",
    "The account has exhausted its token quota.",
    "the account's token quota cannot cover the request",
    "never",
  ),
  budget_exceeded: entry(
    429,
    "insufficient_quota",
    "budget_exceeded",
    "The budget cannot cover this request.",
    "the account's or the key's money budget cannot cover the most the request can cost",
    "never",
  ),
  limit_held: entry(
    429,
    "tokens",
    "tokens_held",
    "The tokens left under this API key's limit or the account's quota are held by calls still in flight. Retry after the time in the retry-after header.",
    "the request fits what consumption leaves, but calls still in flight hold those tokens and did not settle within `ledger.wait_ms` (the message says how many are left)",
    1,
  ),
  withheld_repeats: entry(
    429,
    "requests",
    "withheld_repeats",
    "This API key's answers were withheld by the gateway's content policy too many times in a short while; its calls are refused for now. Change the request rather than sending it again.",
    "the key's answers were withheld by content safety `safety.withheld_limit.max` times within `window_ms` (10 in 60 s by default): its calls are refused until the oldest leaves the window (`retry-after` says when), so an agent that retries a withheld turn stops",
    "never",
  ),
  ledger_unavailable: entry(
    503,
    "dev_gateway_error",
    "ledger_unavailable",
    "The gateway cannot reach the shared ledger, so it admits no call. Retry later.",
    "the store or Redis holding the shared quota ledger and rate limits is unreachable; nothing was sent upstream or charged",
    1,
  ),
  rate_limited_requests: entry(
    429,
    "requests",
    "rate_limit_exceeded",
    "Rate limit reached for requests per minute. Retry after the time in the retry-after header.",
    "the key's or the account's requests per minute are used up (`retry-after` says when to retry)",
  ),
  rate_limited_tokens: entry(
    429,
    "tokens",
    "rate_limit_exceeded",
    "Rate limit reached for tokens per minute. Retry after the time in the retry-after header.",
    "the key's or the account's tokens per minute cannot cover the request (`retry-after` says when)",
  ),
  count_queue_full: entry(
    429,
    "requests",
    "count_queue_full",
    "This account has as many token counts waiting as the gateway takes. Retry after the time in the retry-after header.",
    "`POST /v1/messages/count_tokens` while the account already has `counting.queue_per_account` counts queued or running on the gateway's counting thread",
    1,
  ),
  count_queue_busy: entry(
    503,
    "dev_gateway_error",
    "count_queue_busy",
    "The gateway's token counter has as many counts waiting as it takes. Retry after the time in the retry-after header.",
    "`POST /v1/messages/count_tokens` while `counting.queue_total` counts of all accounts are queued or running on the gateway's counting thread",
    1,
  ),
  invalid_request: entry(
    400,
    "invalid_request_error",
    "invalid_request",
    "The request body is not valid.",
    "a field is missing, of the wrong type or out of range (`param` names it)",
  ),
  invalid_json: entry(
    400,
    "invalid_request_error",
    "invalid_json",
    "The request body is not valid JSON.",
    "the body is not JSON, is empty, or is not valid UTF-8",
  ),
  unsupported_media_type: entry(
    415,
    "invalid_request_error",
    "unsupported_media_type",
    "Content-Type must be application/json.",
    "a body sent with another content type",
  ),
  request_too_large: entry(
    413,
    "invalid_request_error",
    "request_too_large",
    "The request body is larger than the gateway accepts.",
    "the body exceeds `server.body_limit_bytes`, or on `/v1/messages`, its `count_tokens` and `/v1/responses` `server.agent_body_limit_bytes` (32 MiB by default); refused before it is read, the message names the limit and the setting (`POST /v1/messages`: Anthropic's type `request_too_large`)",
  ),
  request_timeout: entry(
    408,
    "invalid_request_error",
    "request_timeout",
    "The request did not arrive in time.",
    "the request's headers (`server.headers_timeout_ms`) or its whole body (`server.request_timeout_ms`) did not arrive in time; the connection is closed",
  ),
  model_not_found: entry(
    404,
    "invalid_request_error",
    "model_not_found",
    "The model does not exist or your plan does not include it.",
    "`model` is unknown or not in the account's plan",
  ),
  wrong_model_kind: entry(
    400,
    "invalid_request_error",
    "wrong_model_kind",
    "This model is not served by this API.",
    "`model` is an embedding model sent to a chat API (chat completions, Messages, Responses, count_tokens), or a chat model sent to `POST /v1/embeddings` (`param`: `model`; the message says which API serves it)",
  ),
  response_not_found: entry(
    404,
    "invalid_request_error",
    "response_not_found",
    "No stored response with that id.",
    "`GET` or `DELETE /v1/responses/{id}` of a response the account does not have: never stored (`store: false`), deleted, expired (`retention.responses_days`), or another account's",
  ),
  stored_response_too_large: entry(
    413,
    "invalid_request_error",
    "stored_response_too_large",
    "This response would be too large to store, or its conversation too large to continue.",
    "a Responses API request with `store` (the default) whose input is over `responses.max_stored_bytes`, or a `previous_response_id` whose conversation is over `responses.max_continued_bytes`; send `store: false`, or start a new conversation",
  ),
  stored_responses_full: entry(
    429,
    "rate_limit_error",
    "stored_responses_full",
    "The account keeps as many stored responses as it may.",
    "the account's stored responses hold `responses.max_account_bytes`; refused before anything is sent: delete responses (`DELETE /v1/responses/{id}`), wait for them to expire, or send `store: false`",
  ),
  previous_response_not_found: entry(
    400,
    "invalid_request_error",
    "previous_response_not_found",
    "The previous response was not found.",
    "`previous_response_id` names no stored response of the account, or a conversation one of whose earlier responses was deleted or has expired",
  ),
  console_unauthenticated: entry(
    401,
    "authentication_error",
    "console_unauthenticated",
    "Log in to the console first: there is no session, or it has expired.",
    "a console call (`/api/console/`) without a session cookie, or with an expired one",
  ),
  invalid_credentials: entry(
    401,
    "authentication_error",
    "invalid_credentials",
    "The e-mail or the password is not correct.",
    "a console login with an unknown e-mail, a wrong password or a disabled user",
  ),
  console_forbidden: entry(
    403,
    "permission_error",
    "console_forbidden",
    "Your role does not allow this.",
    "a console call the user's role does not allow (e.g. a member managing keys, a non-admin on admin calls)",
  ),
  origin_mismatch: entry(
    403,
    "permission_error",
    "origin_mismatch",
    "The request's Origin is not this gateway's.",
    "a console POST, PATCH or DELETE whose `Origin` header is missing or is not the gateway's own origin",
  ),
  host_not_allowed: entry(
    403,
    "permission_error",
    "host_not_allowed",
    "The Host header names a host this gateway's console does not answer to.",
    "a console call whose `Host` is not a loopback name, an IP address, the listen address or in `server.allowed_hosts`",
  ),
  metrics_unauthenticated: entry(
    401,
    "authentication_error",
    "metrics_unauthenticated",
    "Send the metrics token as the header 'Authorization: Bearer <token>'.",
    "`GET /metrics` without the token `metrics.token_env` names, when it names one",
  ),
  login_rate_limited: entry(
    429,
    "requests",
    "login_rate_limited",
    "Too many failed logins. Retry after the time in the retry-after header.",
    "a console login sooner than its backoff allows: past 5 failures for one e-mail from one client address, 20 from the address, or 50 for the e-mail from addresses it never logged in from, 1 s doubling per failure (`retry-after` says when)",
  ),
  admin_unauthenticated: entry(
    401,
    "authentication_error",
    "admin_unauthenticated",
    "Send an admin token as 'Authorization: Bearer gwadmin-...'.",
    "an admin API call (`/admin/v1/`) without an admin token (or an admin's console session), or with an unknown or revoked one",
  ),
  admin_forbidden: entry(
    403,
    "permission_error",
    "admin_forbidden",
    "This admin token's scopes do not allow this.",
    "an admin API call outside the token's scopes (e.g. a `read` token changing something, a `keys` token changing the catalog)",
  ),
  catalog_read_only: entry(
    409,
    "invalid_request_error",
    "catalog_read_only",
    "The catalog is managed in the configuration file (catalog.source: file): change it there and reload.",
    "a change to providers, models or plans through the admin API or the console on a gateway whose file is the catalog's source",
    "never",
  ),
  not_found: entry(
    404,
    "invalid_request_error",
    "not_found",
    "No such object.",
    "a console or admin API call naming an account, key, user, ticket or admin token that does not exist or is not yours",
  ),
  conflict: entry(
    409,
    "invalid_request_error",
    "conflict",
    "The change conflicts with the current state.",
    "a console or admin API change that clashes with what exists (e.g. the e-mail or account name is taken)",
  ),
  malformed_http: entry(
    400,
    "dev_gateway_error",
    "http_error",
    "The HTTP request is malformed.",
    "the request line or headers break HTTP/1.1 (answered before any route runs)",
  ),
  headers_too_large: entry(
    431,
    "dev_gateway_error",
    "http_error",
    "The request headers are too large.",
    "the request headers exceed 16 KiB",
  ),
  route_not_found: entry(
    404,
    "dev_gateway_error",
    "http_error",
    "Unknown route.",
    "no such path, or the method is not served on it",
  ),
  upstream_error: entry(
    502,
    "upstream_error",
    "upstream_error",
    "The upstream model returned an error.",
    "the upstream answered an error or a malformed reply, or the connection failed",
  ),
  upstream_bad_request: entry(
    400,
    "invalid_request_error",
    "upstream_bad_request",
    "The upstream model rejected the request.",
    "the upstream answered 400 or 422: the request is valid here but not for that model. The upstream's own `code` (e.g. `context_length_exceeded`), `param` and message are passed on when it gave them; `upstream_bad_request` when it gave none",
  ),
  upstream_key_refused: entry(
    502,
    "upstream_error",
    "upstream_key_refused",
    "The upstream refused the gateway's key for this model; the gateway's operator must check the provider's key.",
    "the upstream answered 401 or 403 (Gemini: 400 `API_KEY_INVALID`): the key the gateway holds for that provider is wrong, revoked or lacks a permission. Not the client's key; the message never quotes the upstream's",
    "never",
  ),
  upstream_timeout: entry(
    504,
    "upstream_error",
    "upstream_timeout",
    "The upstream model did not answer in time.",
    "an upstream timeout (connect, first byte, idle or total) passed",
  ),
  upstream_rate_limited: entry(
    429,
    "upstream_error",
    "upstream_rate_limited",
    "Every upstream of this model is rate-limited right now. Retry after the time in the retry-after header.",
    "every attempt of the call was refused with 429 (or 529) by its upstream, so the deployments are cooling down; `retry-after` says when the first takes calls again",
    1,
  ),
  content_filter: entry(
    400,
    "invalid_request_error",
    "content_filter",
    "The request was blocked by the content safety review.",
    "content safety is on with `review_input` and a reviewer flagged the caller's messages (nothing was sent upstream), or the upstream's own content filter refused the prompt (Azure OpenAI's 400 `content_filter`); nothing is charged",
  ),
  safety_unavailable: entry(
    503,
    "dev_gateway_error",
    "safety_unavailable",
    "The content safety review could not be completed, so no model output was released. Retry later.",
    "a reviewer failed or exceeded `safety.timeout_ms`; nothing is charged (the record keeps the upstream's usage as `uncharged_tokens`)",
    1,
  ),
  store_unavailable: entry(
    503,
    "dev_gateway_error",
    "store_unavailable",
    "The gateway could not record this call, so it did not complete it. Retry later.",
    "the call record could not be committed after retries (the store is down or full)",
    1,
  ),
  console_not_built: entry(
    503,
    "dev_gateway_error",
    "console_not_built",
    "The web console has not been built. Run `npm run build:console`, then reload.",
    "`/console` was requested but `dist/console` is missing (`npm install` in a clone, `npm run build` and `npm test` build it)",
  ),
  shutting_down: entry(
    503,
    "dev_gateway_error",
    "shutting_down",
    "The gateway is shutting down; retry on another instance.",
    "a request arrived after SIGTERM",
    1,
  ),
  internal_error: entry(
    500,
    "dev_gateway_error",
    "internal_error",
    "The gateway failed to process the request.",
    "a fault of the gateway itself (never caused by client input)",
  ),
} as const satisfies Record<string, CatalogEntry>;

export type ErrorName = keyof typeof catalog;
