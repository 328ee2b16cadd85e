// POST /v1/messages, Anthropic's Messages API, as a client API of the pipeline
// (src/apis/types.ts): the body validated and translated into the canonical request, and
// carried as it is beside it for Anthropic upstreams (native: nothing lost); answers, streams
// and errors in Anthropic's shapes. The key comes in `x-api-key` (Anthropic's SDKs, Claude
// Code with ANTHROPIC_API_KEY) or `Authorization: Bearer` (ANTHROPIC_AUTH_TOKEN).
import type { IncomingHttpHeaders } from "node:http";
import { parseBearer } from "../../accounts/key-format.ts";
import type { ChatRequest } from "../../domain/chat-request.ts";
import type { NativeRequest } from "../../providers/types.ts";
import type {
  AnswerContext,
  ClientApi,
  ClientCall,
  Credential,
  JsonAnswer,
  StreamRenderer,
} from "../types.ts";
import { messageBody } from "./answer.ts";
import { anthropicErrorAnswer } from "./errors.ts";
import { canonicalRequest, checkMessages, messagesRequestSchema, parseBody } from "./request.ts";
import { MessagesStream } from "./stream.ts";

/** The headers of the Messages API an Anthropic upstream may get (its allow-list decides which betas). */
const FORWARDED_HEADERS = ["anthropic-beta"] as const;

function apiHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = headers[name];
    if (typeof value === "string" && value) out[name] = value;
  }
  return out;
}

class MessagesCall implements ClientCall {
  readonly api = messages;
  readonly request: ChatRequest;
  readonly native: NativeRequest;

  constructor(request: ChatRequest, native: NativeRequest) {
    this.request = request;
    this.native = native;
  }

  json(answer: JsonAnswer): string {
    return messageBody(answer);
  }

  stream(context: AnswerContext): StreamRenderer {
    return new MessagesStream(context);
  }
}

function field(value: unknown, name: string): unknown {
  return value !== null && typeof value === "object" ? (value as Record<string, unknown>)[name] : undefined;
}

/** x-api-key first (Anthropic's own header), else a Bearer token. */
export function messagesCredential(headers: IncomingHttpHeaders): Credential {
  const key = headers["x-api-key"];
  if (typeof key === "string" && key.trim()) return { kind: "token", token: key.trim() };
  return parseBearer(headers.authorization);
}

export const messages: ClientApi = {
  name: "messages",
  credential: messagesCredential,
  missingKey:
    "No API key provided. Send it as the header 'x-api-key: sk-...' or 'Authorization: Bearer sk-...'.",
  // Anthropic's SDKs read `request-id` (`message._request_id`, `error.requestID`)
  requestIdHeader: "request-id",
  error: anthropicErrorAnswer,
  // Claude Code names its session in metadata.user_id too, for clients that drop its header
  sessionHints: (body) => ({ metadataUserId: field(field(body, "metadata"), "user_id") }),
  parse(body: unknown, headers: IncomingHttpHeaders): ClientCall {
    const req = parseBody(messagesRequestSchema, body);
    checkMessages(req);
    const { request, untranslated } = canonicalRequest(req);
    return new MessagesCall(request, {
      api: "messages",
      body: body as Record<string, unknown>,
      headers: apiHeaders(headers),
      untranslated,
    });
  },
};
