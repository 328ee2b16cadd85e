// Forward compatibility: what a client sent that the canonical request cannot carry (a field,
// a content block, a tool or an input item the gateway does not translate, often one newer
// than the gateway), and what each attempt does with it. One policy for every API and
// provider (docs/decisions/0021-forward-compatible-edges.md):
// - to an adapter that sends the client's body natively (same API: Anthropic for Messages,
//   OpenAI's Responses API for Responses), everything passes unchanged, but for the names the
//   operator denies on that provider, which are taken out of the body;
// - to an adapter that translates, what has no counterpart is dropped, and the client hears of
//   it (the `x-gateway-dropped` response header, and the call's record);
// - a provider in strict mode refuses the call instead, before anything is sent, naming what
//   it could not carry.
// Malformed values are refused by the edges whatever this says: this is about names, not
// about bad input.
import { z } from "zod";
import { GatewayError } from "../errors/index.ts";
import { withoutDearOptions } from "./billed-options.ts";
import { BUILTIN_REFUSAL, withoutDisallowedTools } from "./builtin-tools.ts";
import { type Capabilities, fitCapabilities } from "./capabilities.ts";
import type { EmbeddingCall, NativeRequest, Provider, UpstreamCall } from "./types.ts";

/** One construct of the client's body the canonical request does not carry. */
export interface Untranslated {
  /** where it is in the client's body: `output_config`, `tools[3]`, `messages[2].content[0]` */
  param: string;
  /** what it is: the field's name, or the block's, tool's or item's type */
  name: string;
  /**
   * The class of capability a client's own fallback keys on when it is refused (Claude Code's
   * `capability_rejected: <class>`, src/apis/messages/errors.ts), where one applies.
   */
  capability?: string | undefined;
}

/** How a provider treats what it cannot carry, and what it never takes natively. */
export interface PassthroughSettings {
  /** refuse a call that carries something this upstream cannot take, instead of dropping it */
  strict: boolean;
  /**
   * Names never passed natively to this upstream (top-level fields, content block types,
   * tool types, input item types): taken out of the body as if untranslated.
   */
  deny: readonly string[];
}

export const DEFAULT_PASSTHROUGH: PassthroughSettings = Object.freeze({ strict: false, deny: [] });

/** Names never passed natively: exact, or a prefix when they end with `*`. */
export const denyNames = z.array(z.string().min(1).max(128)).max(256);

/** The provider configuration fields of this policy, shared by every provider type. */
export const passthroughFields = {
  strict: z
    .boolean()
    .default(false)
    .describe(
      "false (the default): what the upstream cannot take is dropped, and the client is told in the `x-gateway-dropped` header; true: the call is refused with 400 naming it.",
    ),
  deny: denyNames
    .default([])
    .describe("names never passed natively to this upstream: top-level fields, block, tool and item types"),
};

/** The settings of a provider's configuration. */
export function passthroughSettings(config: {
  strict?: boolean;
  deny?: readonly string[];
}): PassthroughSettings {
  return { strict: config.strict ?? false, deny: config.deny ?? [] };
}

/** The most names one header lists; more are counted. */
const HEADER_NAMES = 16;

/** The `x-gateway-dropped` header's value: what the answering attempt dropped, bounded. */
export function droppedHeader(dropped: readonly string[]): string | undefined {
  if (!dropped.length) return undefined;
  const unique = [...new Set(dropped)];
  const shown = unique.slice(0, HEADER_NAMES).join(", ");
  const more = unique.length - HEADER_NAMES;
  // a header is Latin-1 at most: names from a body may hold anything
  return (more > 0 ? `${shown}, and ${more} more` : shown).replace(/[^\x20-\x7e]/g, "?");
}

/** How an untranslated construct is named in notices and refusals. */
export function describe(u: Untranslated): string {
  return u.param === u.name ? u.name : `${u.param} (${u.name})`;
}

/** Records a dropped construct on the attempt's call (its notices reach the header and the record). */
export function noteDropped(call: UpstreamCall | EmbeddingCall, what: string): void {
  if (call.dropped) call.dropped.push(what);
  else call.dropped = [what];
}

/** The refusal of a construct a strict provider cannot take. */
export function refusal(u: Untranslated, provider: string, why: string): GatewayError {
  return new GatewayError("invalid_request", {
    message: `${u.param === u.name ? `'${u.name}'` : `${u.param} ('${u.name}')`} is not supported by ${provider}: ${why}. Leave it out, or ask the gateway's operator to turn off strict mode on this provider (it then drops what it cannot carry, and says so in the x-gateway-dropped header).`,
    param: u.param,
    capability: u.capability,
  });
}

/** Whether a deny entry names `name`: exactly, or as a prefix when it ends with `*`. */
export function denies(deny: readonly string[], name: string): boolean {
  for (const d of deny) {
    if (d.endsWith("*") ? name.startsWith(d.slice(0, -1)) : d === name) return true;
  }
  return false;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The lists of a native body whose entries carry a `type`, and the lists inside them. */
function typedEntries(body: Json): Array<{ param: string; list: unknown[]; index: number; entry: Json }> {
  const out: Array<{ param: string; list: unknown[]; index: number; entry: Json }> = [];
  const walk = (param: string, list: unknown) => {
    if (!Array.isArray(list)) return;
    list.forEach((entry, index) => {
      if (isObject(entry) && typeof entry.type === "string")
        out.push({ param: `${param}[${index}]`, list, index, entry });
    });
  };
  walk("tools", body.tools);
  walk("input", body.input);
  walk("system", body.system);
  if (Array.isArray(body.messages))
    body.messages.forEach((m, i) => {
      if (isObject(m)) walk(`messages[${i}].content`, m.content);
    });
  if (Array.isArray(body.input))
    body.input.forEach((item, i) => {
      if (isObject(item)) walk(`input[${i}].content`, item.content);
    });
  return out;
}

/**
 * A native body without the names the provider denies: each removed entry is an untranslated
 * construct, refused (strict) or dropped with a notice. Copies only what it changes.
 */
function withoutDenied(
  native: NativeRequest,
  settings: PassthroughSettings,
  call: UpstreamCall,
  provider: string,
): NativeRequest {
  if (!settings.deny.length) return native;
  const removed: Untranslated[] = [];
  let body: Json = native.body as Json;
  for (const key of Object.keys(body))
    if (denies(settings.deny, key)) {
      if (body === native.body) body = { ...body };
      delete body[key];
      removed.push({ param: key, name: key });
    }
  // entries of lists: copied list by list (a body is shared by every attempt of a call)
  const copies = new Map<unknown[], unknown[]>();
  const hits = typedEntries(body).filter((e) => denies(settings.deny, e.entry.type as string));
  if (hits.length) {
    body = structuredClone(body);
    for (const hit of typedEntries(body).filter((e) => denies(settings.deny, e.entry.type as string))) {
      removed.push({ param: hit.param, name: hit.entry.type as string });
      copies.set(hit.list, hit.list);
      hit.list[hit.index] = undefined;
    }
    for (const list of copies.keys()) {
      const kept = list.filter((e) => e !== undefined);
      list.length = 0;
      list.push(...kept);
    }
  }
  for (const u of removed) {
    if (settings.strict)
      throw refusal(u, provider, "the gateway's operator does not pass it to this upstream");
    noteDropped(call, describe(u));
  }
  return removed.length ? { ...native, body } : native;
}

/**
 * The call as this attempt's provider gets it: sent natively, the body less what the operator
 * denies there (and the built-in tools it does not allow); translated, fitted to the model's
 * capabilities, and what the canonical request could not carry is dropped with a notice. A
 * strict provider refuses instead. Throws before anything is sent.
 */
export function prepareAttempt(
  call: UpstreamCall,
  provider: Provider,
  capabilities: Capabilities,
): UpstreamCall {
  const settings = provider.passthrough ?? DEFAULT_PASSTHROUGH;
  const natively = call.native !== undefined && provider.sendsNatively?.(call.native) === true;
  call = withoutDearOptions(call, provider.id, settings.strict, natively);
  const native = call.native;
  if (!native || !provider.sendsNatively?.(native)) call = fitCapabilities(call, capabilities);
  if (!native) return call;
  if (provider.sendsNatively?.(native)) {
    let kept = withoutDenied(native, settings, call, provider.id);
    if (kept.builtinTools?.length) {
      const { body, removed } = withoutDisallowedTools(
        kept.body,
        kept.builtinTools,
        provider.builtinTools?.(kept) ?? NONE,
      );
      for (const use of removed) {
        const u = { param: use.param, name: use.type };
        if (settings.strict) throw refusal(u, provider.id, BUILTIN_REFUSAL);
        noteDropped(call, describe(u));
      }
      if (removed.length) kept = { ...kept, body };
    }
    return kept === native ? call : { ...call, native: kept };
  }
  const untranslated = [
    ...(native.untranslated ?? []),
    ...(native.builtinTools ?? []).map((use) => ({ param: use.param, name: use.type })),
  ];
  for (const u of untranslated) {
    if (settings.strict)
      throw refusal(
        u,
        provider.id,
        native.builtinTools?.some((use) => use.param === u.param)
          ? BUILTIN_REFUSAL
          : "the upstream's API has no counterpart for it",
      );
    noteDropped(call, describe(u));
  }
  return call;
}

const NONE: ReadonlySet<string> = new Set();

/**
 * The fields of an embeddings request the gateway does not read, as this attempt's provider
 * takes them: an adapter that speaks OpenAI's embeddings API (`native`) sends all but what
 * the operator denies; a translating one sends none. What is left out is dropped with a
 * notice, or refused by a strict provider, before anything is sent.
 */
export function embeddingExtras(
  call: EmbeddingCall,
  provider: string,
  settings: PassthroughSettings,
  native: boolean,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  const extra = call.request.extra;
  for (const name in extra) {
    if (native && !denies(settings.deny, name)) {
      kept[name] = extra[name];
      continue;
    }
    const u = { param: name, name };
    if (settings.strict)
      throw refusal(
        u,
        provider,
        native
          ? "the gateway's operator does not pass it to this upstream"
          : "the upstream's API has no counterpart for it",
      );
    noteDropped(call, name);
  }
  return kept;
}
