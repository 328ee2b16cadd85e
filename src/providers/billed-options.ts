// Options a client may ask for that the upstream bills above the prices the gateway charges
// (second audit, item 9): Anthropic bills a one-hour cache write (`cache_control.ttl: "1h"`) at
// twice the input price where the gateway prices every cache write at the five-minute rate, and
// OpenAI bills `service_tier: "priority"` above the standard price the gateway charges. The
// gateway never charges less than the upstream will: such options are taken out of the request
// (the upstream then bills the standard rate the gateway charges), named in `x-gateway-dropped`;
// a strict provider refuses the call instead. The prices of these options are not configured
// anywhere yet, which is why they are not passed on priced. Google bills grounding with Google
// Search and Google Maps per request or per query, beyond the tokens: a Gemini API body sent
// natively goes without those tools (its other tools, code execution and URL context, are
// billed as tokens).
import { GatewayError } from "../errors/index.ts";
import { noteDropped } from "./passthrough.ts";
import type { NativeRequest, UpstreamCall } from "./types.ts";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Service tiers billed above the standard price (OpenAI's priority processing). */
const DEAR_TIERS: ReadonlySet<string> = new Set(["priority"]);

/** Gemini's tools billed per grounded request or query, in both spellings of Google's JSON. */
const BILLED_GOOGLE_TOOLS: ReadonlySet<string> = new Set([
  "googleSearch",
  "google_search",
  "googleSearchRetrieval",
  "google_search_retrieval",
  "googleMaps",
  "google_maps",
]);

/** A Gemini body's tools without those billed per request; the names taken out, by place. */
function withoutBilledTools(tools: unknown): { tools: unknown[]; removed: string[] } | undefined {
  if (!Array.isArray(tools)) return undefined;
  const removed: string[] = [];
  const kept = tools.flatMap((tool, i) => {
    if (!isObject(tool)) return [tool];
    const names = Object.keys(tool).filter((k) => BILLED_GOOGLE_TOOLS.has(k));
    if (!names.length) return [tool];
    const rest: Json = { ...tool };
    for (const name of names) {
      delete rest[name];
      removed.push(`tools[${i}].${name}`);
    }
    return Object.keys(rest).length ? [rest] : [];
  });
  return removed.length ? { tools: kept, removed } : undefined;
}

/** Whether `entry` carries a cache marker of a longer, dearer lifetime than five minutes. */
const longCache = (entry: unknown): boolean =>
  isObject(entry) &&
  isObject(entry.cache_control) &&
  entry.cache_control.ttl !== undefined &&
  entry.cache_control.ttl !== "5m";

/** A copy of `entry` whose cache marker has the default lifetime. */
function shortCache(entry: Json): Json {
  const { ttl: _ttl, ...marker } = entry.cache_control as Json;
  return { ...entry, cache_control: marker };
}

/** The list with its long cache markers shortened (and inside tool results), or itself when it has none. */
function shortened(list: unknown, count: { n: number }): unknown {
  if (!Array.isArray(list)) return list;
  let changed = false;
  const out = list.map((entry) => {
    let e = entry;
    if (longCache(e)) {
      e = shortCache(e as Json);
      count.n++;
    }
    if (isObject(e) && Array.isArray(e.content)) {
      const inner = shortened(e.content, count);
      if (inner !== e.content) e = { ...e, content: inner };
    }
    if (e !== entry) changed = true;
    return e;
  });
  return changed ? out : list;
}

function refuse(param: string, provider: string, what: string): GatewayError {
  return new GatewayError("invalid_request", {
    message: `${what} is billed by ${provider} above the prices the gateway charges: leave it out, or ask the gateway's operator to turn off strict mode on this provider (it then sends the request without it, and says so in the x-gateway-dropped header).`,
    param,
  });
}

/** A native body without the options billed above the gateway's prices; itself when it has none. */
function nativeWithout(
  native: NativeRequest,
  call: UpstreamCall,
  provider: string,
  strict: boolean,
  natively: boolean,
): NativeRequest {
  let body: Json = native.body as Json;
  if (typeof body.service_tier === "string" && DEAR_TIERS.has(body.service_tier)) {
    if (strict) throw refuse("service_tier", provider, `service_tier '${body.service_tier}'`);
    const { service_tier: _tier, ...rest } = body;
    body = rest;
    noteDropped(call, `service_tier (${native.body.service_tier as string})`);
  }
  // (a translation carries none of Google's tools: it drops them with its own notice)
  if (native.api === "gemini" && natively) {
    const billed = withoutBilledTools(body.tools);
    if (billed) {
      if (strict)
        throw refuse(
          billed.removed[0]!,
          provider,
          `Google's ${billed.removed[0]!.split(".")[1]} tool (billed per request)`,
        );
      for (const place of billed.removed) noteDropped(call, place);
      const { tools: _tools, ...rest } = body;
      body = billed.tools.length ? { ...rest, tools: billed.tools } : rest;
    }
  }
  if (native.api === "messages") {
    const count = { n: 0 };
    const next: Json = { ...body };
    for (const field of ["system", "tools", "messages"] as const) next[field] = shortened(body[field], count);
    if (count.n) {
      if (strict) throw refuse("cache_control.ttl", provider, "A cache_control.ttl longer than 5m");
      noteDropped(call, `cache_control.ttl (${count.n} markers)`);
      for (const field of ["system", "tools", "messages"] as const)
        if (body[field] === undefined) delete next[field];
      body = next;
    }
  }
  return body === native.body ? native : { ...native, body };
}

/**
 * The call without the options its upstream would bill above the gateway's prices: in the
 * body sent natively and in the canonical request. Throws, before anything is sent, when the
 * provider is strict.
 */
export function withoutDearOptions(
  call: UpstreamCall,
  provider: string,
  strict: boolean,
  /** whether this attempt sends the native body as it is */
  natively = true,
): UpstreamCall {
  let out = call;
  const tier = call.request.service_tier;
  if (typeof tier === "string" && DEAR_TIERS.has(tier)) {
    if (strict) throw refuse("service_tier", provider, `service_tier '${tier}'`);
    const { service_tier: _tier, ...request } = call.request;
    out = { ...out, request };
    if (!call.native) noteDropped(out, `service_tier (${tier})`);
  }
  if (out.native) {
    const native = nativeWithout(out.native, out, provider, strict, natively);
    if (native !== out.native) out = { ...out, native };
  }
  return out;
}
