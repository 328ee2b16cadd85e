// What a provider does with each OpenAI request field: translates it, drops it because it
// changes nothing there, or cannot honour it. A field that would change the answer is never
// dropped silently: by default it is dropped with a notice (the `x-gateway-dropped` header and
// the record, ./passthrough.ts); a provider in strict mode refuses the request instead,
// naming the field and the provider, and nothing goes upstream.
// The same rules render the tables of docs/providers.md (npm run docs:providers).
import { type ChatRequest, FORWARDED_FIELDS } from "../domain/chat-request.ts";
import { GatewayError } from "../errors/index.ts";
import { noteDropped } from "./passthrough.ts";
import type { UpstreamCall } from "./types.ts";

export type ForwardedField = (typeof FORWARDED_FIELDS)[number];

export interface FieldRule {
  /** what the field becomes at the provider, for docs/providers.md */
  becomes: string;
  /**
   * Why this value cannot be honoured there, or undefined when it can (translated, or
   * dropped because it changes nothing). Absent: every value is fine.
   */
  refuse?: (value: never, request: ChatRequest) => string | undefined;
}

export type FieldRules = Record<ForwardedField, FieldRule>;

/** Translated into the provider's own field, whatever the value. */
export const mapped = (becomes: string): FieldRule => ({ becomes });

/** Dropped quietly: no value changes the provider's answer. */
export const dropped = (why: string): FieldRule => ({ becomes: `dropped: ${why}` });

/**
 * Refused unless `harmless(value)`, which is then dropped quietly. `why` says what the
 * provider lacks and is the end of the refusal's message.
 */
export function refused(
  why: string,
  harmless: (value: never) => boolean = () => false,
  note?: string,
): FieldRule {
  return {
    becomes: note ?? `refused: ${why}`,
    refuse: (value) => (harmless(value) ? undefined : why),
  };
}

/**
 * What every translating provider does alike: fields no translation carries, and fields that
 * change nothing there.
 */
export const SHARED_RULES = {
  logit_bias: refused(
    "it has no logit bias",
    (b: Record<string, number>) => Object.keys(b).length === 0,
    "`{}`: dropped; else refused",
  ),
  stream_options: dropped("the gateway reads the stream's usage itself and honours `include_usage`"),
  modalities: refused(
    "the gateway takes text answers only",
    (m: string[]) => m.every((x) => x === "text"),
    '`["text"]`: dropped; audio: refused',
  ),
  audio: refused("the gateway takes text answers only"),
  prediction: dropped("predicted outputs only speed an answer up"),
  metadata: dropped("OpenAI's tags for stored completions"),
  store: dropped("OpenAI's stored completions"),
  service_tier: dropped("a billing tier; the answer is the same"),
  verbosity: refused(
    "it has no verbosity setting",
    (v: string) => v === "medium",
    "`medium`: dropped; else refused",
  ),
  web_search_options: refused("search is not offered through the gateway"),
  prompt_cache_key: dropped("a cache routing hint"),
  functions: refused("the legacy functions field is not translated; send tools"),
  function_call: refused("the legacy function_call field is not translated; send tool_choice"),
} satisfies Partial<FieldRules>;

/**
 * The request as the provider's translation reads it: a field it cannot honour is left out and
 * noted on the call; in strict mode it throws invalid_request naming the field and the
 * provider. Call before anything is sent, so a refusal costs no upstream call.
 */
export function applyFieldRules(
  call: UpstreamCall,
  rules: FieldRules,
  provider: string,
  strict: boolean,
): ChatRequest {
  const request = call.request;
  let out = request;
  for (const field of Object.keys(rules) as ForwardedField[]) {
    const value = request[field];
    const refuse = rules[field].refuse;
    if (value === undefined || !refuse) continue;
    const why = refuse(value as never, request);
    if (why === undefined) continue;
    if (strict)
      throw new GatewayError("invalid_request", {
        message: `'${field}' is not supported by ${provider}: ${why}. Leave it out, or ask the gateway's operator to turn off strict mode on this provider (it then drops the field and says so in the x-gateway-dropped header).`,
        param: field,
      });
    noteDropped(call, field);
    if (out === request) out = { ...request };
    delete out[field];
  }
  return out;
}

/** A refusal of a part of a message (a content part, a role) the provider cannot take. */
export function unsupportedPart(param: string, provider: string, what: string): GatewayError {
  return new GatewayError("invalid_request", {
    message: `${what} is not supported by ${provider}.`,
    param,
  });
}

/**
 * Markdown table of a provider's rules, in the order of chat completions' field list
 * (docs/apis.md), for docs/providers.md.
 */
export function rulesTable(rules: FieldRules): string {
  const lines = ["| OpenAI field | What it becomes |", "| --- | --- |"];
  for (const field of FORWARDED_FIELDS)
    lines.push(`| \`${field}\` | ${rules[field].becomes.replace(/\|/g, "\\|")} |`);
  return lines.join("\n");
}
