// The provider adapter contract. An adapter takes an OpenAI-shaped request and yields
// OpenAI-shaped results, so the relay never knows which upstream it talks to. Adapters for
// Anthropic, Gemini or Azure translate both ways inside their own folder.

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [extra: string]: unknown;
}

export interface ChatCompletion {
  id?: string;
  object: "chat.completion";
  created?: number;
  model?: string;
  choices: Array<{
    index: number;
    message: { role: string; content: string | null; [extra: string]: unknown };
    finish_reason: string | null;
    [extra: string]: unknown;
  }>;
  usage?: ChatUsage | null;
  [extra: string]: unknown;
}

export interface ChatCompletionChunk {
  id?: string;
  object: "chat.completion.chunk";
  created?: number;
  model?: string;
  choices: Array<{
    index: number;
    delta: { role?: string; content?: string | null; [extra: string]: unknown };
    finish_reason: string | null;
    [extra: string]: unknown;
  }>;
  usage?: ChatUsage | null;
  [extra: string]: unknown;
}

export interface UpstreamRequest {
  /** the upstream's name for the model */
  model: string;
  /** the OpenAI request fields to send, without `model` and `stream` */
  body: Record<string, unknown>;
  /** aborts the upstream call: client gone, total timeout, shutdown */
  signal: AbortSignal;
}

export interface Provider {
  readonly id: string;
  complete(request: UpstreamRequest): Promise<ChatCompletion>;
  /** Chunks in upstream order. Must ask the upstream for usage where it can. */
  stream(request: UpstreamRequest): AsyncIterable<ChatCompletionChunk>;
  close(): Promise<void>;
}

export type UpstreamFailure =
  /** the upstream answered an HTTP error */
  | "status"
  /** a connect, first-byte, idle or total timeout */
  | "timeout"
  /** the connection failed or broke */
  | "network"
  /** the upstream's reply was not what the protocol promises */
  | "malformed";

/** What adapters throw. `message` is already safe to show a client. */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  readonly failure: UpstreamFailure;
  readonly status: number | undefined;

  constructor(failure: UpstreamFailure, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.failure = failure;
    this.status = options.status;
  }
}
