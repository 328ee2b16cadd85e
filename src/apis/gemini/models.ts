// `GET /v1beta/models` and `GET /v1beta/models/{model}`: the models of the caller's plan in
// Google's Model shape, paged as Google pages them (`pageSize`, default 50, at most 1000;
// `pageToken` from the last page's `nextPageToken`). The gateway knows no token limits of its
// models (its `max_output_tokens` is the bound reserved when a request names none, not the
// model's limit), so `inputTokenLimit` and `outputTokenLimit` are left out.
import { GatewayError } from "../../errors/index.ts";

/** What Google's list says each model does; streaming is implied by generateContent. */
const METHODS = ["generateContent", "countTokens"] as const;

const DEFAULT_PAGE = 50;
const MAX_PAGE = 1000;

/** A public model as Google's Model resource. */
export function modelResource(id: string, ownedBy: string) {
  return {
    name: `models/${id}`,
    baseModelId: id,
    version: "gateway",
    displayName: id,
    description: `${id}, served by ${ownedBy} through the gateway.`,
    supportedGenerationMethods: METHODS,
  };
}

const pageToken = (offset: number) => Buffer.from(`o:${offset}`).toString("base64url");

function offsetOf(token: string | undefined): number {
  if (!token) return 0;
  const match = /^o:(\d{1,9})$/.exec(Buffer.from(token, "base64url").toString("utf8"));
  if (!match)
    throw new GatewayError("invalid_request", {
      message: "Invalid value at 'page_token': not a token of this list.",
      param: "pageToken",
    });
  return Number(match[1]);
}

/** One page of the list: `models` and, when more follow, `nextPageToken`. */
export function modelList(
  models: readonly { id: string; ownedBy: string }[],
  query: { pageSize?: string | undefined; pageToken?: string | undefined },
): string {
  const size = query.pageSize === undefined ? DEFAULT_PAGE : Number(query.pageSize);
  if (!Number.isInteger(size) || size < 0)
    throw new GatewayError("invalid_request", {
      message: "Invalid value at 'page_size': must be a non-negative integer.",
      param: "pageSize",
    });
  const take = Math.min(size || DEFAULT_PAGE, MAX_PAGE);
  const offset = offsetOf(query.pageToken);
  const page = models.slice(offset, offset + take).map((m) => modelResource(m.id, m.ownedBy));
  const next = offset + take < models.length ? { nextPageToken: pageToken(offset + take) } : {};
  return JSON.stringify({ models: page, ...next });
}
