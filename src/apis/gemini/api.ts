// Google's Gemini API (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`) as
// a client API of the pipeline (src/apis/types.ts): the body validated and translated into
// the canonical request, and carried as it is beside it for Gemini upstreams (native: nothing
// lost); answers, streams and errors in Google's shapes. The model and whether the answer
// streams are the path's, not the body's: the route makes the API of each call with them
// (`geminiMethod`). The key comes as Google's clients send it: `x-goog-api-key` (the SDKs,
// Gemini CLI), `?key=` (the REST docs' curl examples), or `Authorization: Bearer`.
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
import { type RenderOptions, responseBody } from "./answer.ts";
import { googleErrorAnswer } from "./errors.ts";
import { canonicalRequest, generateContentSchema, includesThoughts, parseBody } from "./request.ts";
import { GeminiStream } from "./stream.ts";

class GeminiCall implements ClientCall {
  readonly api: ClientApi;
  readonly request: ChatRequest;
  readonly native: NativeRequest;
  readonly #options: RenderOptions;

  constructor(api: ClientApi, request: ChatRequest, native: NativeRequest, options: RenderOptions) {
    this.api = api;
    this.request = request;
    this.native = native;
    this.#options = options;
  }

  json(answer: JsonAnswer): string {
    return responseBody(answer, this.#options);
  }

  stream(context: AnswerContext): StreamRenderer {
    return new GeminiStream(context, this.#options);
  }
}

/** The `key` query parameter of a URL, as Google's REST examples pass the key. */
function queryKey(url: string | undefined): string | undefined {
  const at = url?.indexOf("?") ?? -1;
  if (at === -1) return undefined;
  return new URLSearchParams(url!.slice(at + 1)).get("key")?.trim() || undefined;
}

/** `x-goog-api-key` first (Google's SDKs), then `?key=`, else a Bearer token. */
export function geminiCredential(headers: IncomingHttpHeaders, url?: string): Credential {
  const header = headers["x-goog-api-key"];
  if (typeof header === "string" && header.trim()) return { kind: "token", token: header.trim() };
  const key = queryKey(url);
  if (key) return { kind: "token", token: key };
  return parseBearer(headers.authorization);
}

/**
 * The Gemini API as the routes under /v1beta name it (its key, its envelope). Its calls are
 * parsed by `geminiMethod`'s API, which knows the path's model and method.
 */
export const gemini: ClientApi = {
  name: "gemini",
  credential: geminiCredential,
  missingKey:
    "No API key provided. Send it as the header 'x-goog-api-key: sk-...', the query parameter 'key=sk-...' or 'Authorization: Bearer sk-...'.",
  error: googleErrorAnswer,
  parse(): ClientCall {
    throw new Error("a Gemini API call is parsed by the API of its path (geminiMethod)");
  },
};

/** The API of one call: `model` from the path (`models/{model}`), streamed for `:streamGenerateContent`. */
export function geminiMethod(model: string, stream: boolean): ClientApi {
  const api: ClientApi = {
    ...gemini,
    parse(body: unknown): ClientCall {
      const req = parseBody(generateContentSchema, body);
      const { request, untranslated } = canonicalRequest(req, model, stream);
      return new GeminiCall(
        api,
        request,
        { api: "gemini", body: body as Record<string, unknown>, headers: {}, untranslated },
        { thoughts: includesThoughts(req) },
      );
    },
  };
  return api;
}
