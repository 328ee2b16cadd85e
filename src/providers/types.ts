// The provider adapter contract, types only. An adapter receives the validated chat request
// with the output bound the relay reserved, speaks its upstream's wire format, and returns
// canonical results (src/domain/completion.ts): OpenAI-shaped choices, usage in our own figures, finish reasons from
// one set. The relay never sees a wire format; a new provider is a folder implementing
// `ProviderModule` plus one line in ./catalog.ts. A call may also carry the client's request
// in another client API's own form (`native`): an adapter that speaks that API natively may
// send it and return the native answer beside the canonical one (src/apis/types.ts).
import type { z } from "zod";
import type { ApiName } from "../domain/api-names.ts";
import type { ChatRequest } from "../domain/chat-request.ts";
import type { Chunk, Completion } from "../domain/completion.ts";
import type { EmbeddingRequest } from "../domain/embedding-request.ts";
import type { BuiltinToolUse } from "./builtin-tools.ts";
import type { FieldRules } from "./field-policy.ts";
import type { PassthroughSettings, Untranslated } from "./passthrough.ts";
import type { PromptOverheads } from "./prompt-bound.ts";

/**
 * The client's request in its API's own form, beside the canonical one: an adapter that
 * speaks that API may send it instead of translating the canonical request, superseding its
 * model and output bound with the call's.
 */
export interface NativeRequest {
  api: ApiName;
  /** the validated body as the client sent it */
  body: Readonly<Record<string, unknown>>;
  /**
   * Request headers of that API the client sent (lower-case names), for the adapter to
   * forward what its configuration allows (Anthropic: `anthropic-beta`).
   */
  headers: Readonly<Record<string, string>>;
  /**
   * OpenAI's built-in tools the body uses (Responses API), which the canonical request
   * cannot carry: an attempt on a deployment whose adapter does not pass on each of them
   * natively is refused before anything is sent (./builtin-tools.ts).
   */
  builtinTools?: readonly BuiltinToolUse[] | undefined;
  /**
   * What the canonical request could not carry (fields, blocks, tools, items the gateway does
   * not translate): kept by an adapter that sends the body natively, dropped with a notice or
   * refused by the others (./passthrough.ts).
   */
  untranslated?: readonly Untranslated[] | undefined;
}

export type OutputBoundField = "max_tokens" | "max_completion_tokens";

/** One call to an upstream, as the relay asks for it. */
export interface UpstreamCall {
  /** the validated client request; its own max_tokens fields are superseded by `outputBound` */
  request: ChatRequest;
  /** the upstream's name for the model */
  upstreamModel: string;
  /** the most output tokens per choice the upstream may produce: what was reserved */
  outputBound: number;
  /**
   * The model's own setting of the field the bound travels in, where the upstream's API has
   * several (OpenAI: `max_tokens`, which reasoning models refuse, or `max_completion_tokens`).
   */
  outputBoundField?: OutputBoundField | undefined;
  /** aborts the upstream call: client gone, total timeout, shutdown */
  signal: AbortSignal;
  /** the request in the client API's own form; adapters that do not speak that API ignore it */
  native?: NativeRequest | undefined;
  /**
   * What this attempt leaves out of the client's request (./passthrough.ts): the adapter adds
   * what its translation drops; the relay tells the client (`x-gateway-dropped`) and records it.
   */
  dropped?: string[] | undefined;
}

/** One embeddings call to an upstream (POST /v1/embeddings), as the relay asks for it. */
export interface EmbeddingCall {
  /** the validated client request */
  request: EmbeddingRequest;
  /** the upstream's name for the model */
  upstreamModel: string;
  /** aborts the upstream call: client gone, total timeout, shutdown */
  signal: AbortSignal;
  /** what this attempt leaves out of the client's request, as for UpstreamCall */
  dropped?: string[] | undefined;
}

/** An upstream's embeddings, in the order of the request's inputs. */
export interface EmbeddingResult {
  /**
   * One vector per input: floats, or the base64 of little-endian float32s where the upstream
   * was asked for that encoding and gave it (the edge encodes floats itself otherwise).
   */
  vectors: Array<readonly number[] | string>;
  /** the input tokens the upstream counted; undefined when it reports none (Gemini) */
  promptTokens: number | undefined;
}

export interface Provider {
  readonly id: string;
  /**
   * An upper bound of the prompt tokens this upstream can count for the request, template
   * and provider-added prompts included (the model's `overheads`): the prompt part of the
   * reservation. Never an estimate: a bound that is too small lets a key overspend. An
   * adapter that would send `native` instead must bound what that body carries beyond the
   * canonical request.
   */
  promptBound(request: ChatRequest, overheads: PromptOverheads, native?: NativeRequest): number;
  /**
   * The built-in tools of OpenAI's Responses API this adapter passes on for `native` (it then
   * sends that body natively); absent: none, every built-in tool is refused.
   */
  builtinTools?(native: NativeRequest): ReadonlySet<string>;
  /**
   * Whether this adapter sends `native` as the client wrote it (its API is the upstream's), so
   * nothing the canonical request lacks is lost; absent: it always translates.
   */
  sendsNatively?(native: NativeRequest): boolean;
  /**
   * Whether this call's custom tools go upstream as function tools (./custom-tools.ts), whose
   * calls ./catalog.ts turns back into custom calls in the answer; absent: never.
   */
  sendsCustomToolsAsFunctions?(call: UpstreamCall): boolean;
  /** what it does with what it cannot carry; absent: drop with a notice, deny nothing */
  readonly passthrough?: PassthroughSettings | undefined;
  /**
   * The upstream's own count of the prompt of `native` (a client API's count request in the
   * upstream's API: Gemini's countTokens), as the upstream answered it; absent: it counts
   * nothing (the client API counts locally). Throws as `complete` does.
   */
  countTokens?(native: NativeRequest, upstreamModel: string, signal: AbortSignal): Promise<unknown>;
  /** Throws UpstreamError (./upstream-error.ts) or the signal's abort reason. */
  complete(call: UpstreamCall): Promise<Completion>;
  /** Chunks in upstream order, the last carrying usage where the upstream reports it. */
  stream(call: UpstreamCall): AsyncIterable<Chunk>;
  /**
   * Embeds the call's inputs (POST /v1/embeddings); absent: the provider serves no embedding
   * models (the configuration refuses an embedding model on it, see ProviderModule.embeddings).
   * Throws as `complete` does.
   */
  embed?(call: EmbeddingCall): Promise<EmbeddingResult>;
  /** whether `embed` takes inputs given as token ids; absent: text only, token ids are refused */
  readonly embedsTokenIds?: boolean | undefined;
  /**
   * Its upstream keys' states, for the dashboard (./key-pool.ts); absent: the provider holds no
   * keys (the demo).
   */
  keyStates?(): KeyState[];
  close(): Promise<void>;
}

/** One upstream key of a provider as a dashboard may show it: never the key itself. */
export interface KeyState {
  /** its place in the pool: api_key_env first, then api_keys_env, then api_keys */
  index: number;
  /** "…" and at most its last four characters */
  hint: string;
  state: "ready" | "cooling";
  /** Unix ms when its cooldown ends; null when ready */
  cooling_until: number | null;
  /** the upstream's refusals of it since it last worked */
  failures: number;
  /** the last refusal in the gateway's words ("429 rate limited"); null when never refused */
  last_error: string | null;
  /** the calls it was picked for since the provider was built */
  calls: number;
}

/** A provider type: its configuration schema beside the adapter that configuration builds. */
export interface ProviderModule<Config extends { id: string; type: string } = { id: string; type: string }> {
  readonly type: Config["type"];
  readonly config: z.ZodType<Config>;
  /**
   * The price table's name for this provider (src/prices/table.ts), for models configured
   * without prices of their own; absent: only configured prices apply.
   */
  readonly priceTable?: string;
  /**
   * What its translation makes of each OpenAI request field (./field-policy.ts), rendered as
   * its table of docs/providers.md (./docs-tables.ts); absent: it has no table there.
   */
  readonly fieldRules?: FieldRules;
  /** whether its adapter embeds (Provider.embed), so embedding models may be deployed on it */
  readonly embeddings?: boolean;
  create(config: Config, env: Record<string, string | undefined>): Provider;
}
