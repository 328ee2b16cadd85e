// What an OpenAI-shaped upstream is sent: a chat completion of the forwarded fields and
// exactly one output bound, or a Responses API client's own body (./responses.ts); and the
// prompt bound of either.
import { type ChatRequest, FORWARDED_FIELDS } from "../../domain/chat-request.ts";
import { nativeBodyBound, type PromptOverheads, promptUpperBound } from "../prompt-bound.ts";
import type { NativeRequest, UpstreamCall } from "../types.ts";
import type { OpenAICompatibleConfig } from "./config.ts";

/** The request body for this upstream: the forwarded fields and exactly one output bound. */
export function wireBody(
  call: UpstreamCall,
  stream: boolean,
  setting: OpenAICompatibleConfig["output_bound_field"] = "auto",
  openai = false,
): Record<string, unknown> {
  const { request } = call;
  const body: Record<string, unknown> = { model: call.upstreamModel, messages: request.messages };
  // Fields of the client's that the gateway does not know (newer than it, or a server's own
  // such as vLLM's): its API is this upstream's, so they go on as they came.
  const native = call.native?.api === "chat.completions" ? call.native : undefined;
  for (const u of native?.untranslated ?? []) body[u.name] = native!.body[u.name];
  for (const field of FORWARDED_FIELDS) {
    const value = request[field];
    if (value !== undefined) body[field] = value;
  }
  // Exactly one bound goes upstream, the reserved one: a second, larger one left in the body
  // could let an upstream that honours it produce more than was held.
  delete body.max_tokens;
  delete body.max_completion_tokens;
  body[boundField(call, setting, openai)] = call.outputBound;
  if (stream) {
    body.stream = true;
    // Always ask for usage: billing uses the upstream's count, not a local guess.
    body.stream_options = { ...request.stream_options, include_usage: true };
  } else delete body.stream_options;
  return body;
}

function boundField(
  call: UpstreamCall,
  field: OpenAICompatibleConfig["output_bound_field"],
  openai: boolean,
) {
  if (call.outputBoundField) return call.outputBoundField;
  if (field !== "auto") return field;
  if (call.request.max_completion_tokens !== undefined) return "max_completion_tokens";
  if (call.request.max_tokens !== undefined) return "max_tokens";
  return openai ? "max_completion_tokens" : "max_tokens";
}

/**
 * The body of a Responses API call sent natively to {base_url}/responses (./responses.ts): the
 * client's, the stored conversation already expanded into `input` at the edge, with the call's
 * model and reserved output bound, and `store: false`: the gateway keeps responses itself.
 */
export function responsesBody(
  call: UpstreamCall,
  native: NativeRequest,
  stream: boolean,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    ...native.body,
    model: call.upstreamModel,
    // the reserved bound, which covers reasoning too, as max_output_tokens does
    max_output_tokens: call.outputBound,
    // the gateway stores responses itself; OpenAI's copy could be continued around it
    store: false,
  };
  // the edge expanded the stored conversation into input; OpenAI would look it up in its own store
  delete body.previous_response_id;
  delete body.stream_options;
  if (stream) body.stream = true;
  else delete body.stream;
  return body;
}

/**
 * The prompt bound of an OpenAI-shaped deployment: the canonical request's, and for a call this
 * adapter may send natively, what the client's body adds: a Responses body's own bound, or the
 * bytes of the chat fields the gateway does not know, which a server may read as prompt.
 */
export function openaiPromptBound(
  request: ChatRequest,
  overheads: PromptOverheads,
  native?: NativeRequest,
): number {
  const bound = promptUpperBound(request, overheads);
  if (native?.api === "responses") return Math.max(bound, nativeBodyBound(native.body, overheads));
  if (native?.api !== "chat.completions" || !native.untranslated?.length) return bound;
  let extra = 0;
  for (const u of native.untranslated)
    extra += Buffer.byteLength(JSON.stringify(native.body[u.name]) ?? "", "utf8");
  return bound + extra;
}
