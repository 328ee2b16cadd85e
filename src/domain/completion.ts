// The canonical answer: what every provider adapter returns and every client API renders,
// whole (Completion) or a piece at a time (Chunk): OpenAI-shaped choices, usage in the
// gateway's own figures, finish reasons from one set.

/** Why a choice ended, whatever the upstream called it. */
export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter" | "function_call";

/**
 * What the upstream counted, in our convention: `prompt` is everything the model read
 * (fresh input, cache reads and cache writes), `completion` everything it wrote (reasoning
 * included). The others break those figures down.
 */
export interface Usage {
  prompt: number;
  completion: number;
  /** of `prompt`, tokens read from the provider's prompt cache */
  cachedInput: number;
  /** of `prompt`, tokens written to the provider's prompt cache */
  cacheWrite: number;
  /** of `completion`, reasoning (thinking) tokens */
  reasoning: number;
  /**
   * OpenAI usage fields the upstream sent beyond the three totals (prompt_tokens_details,
   * completion_tokens_details, …), passed on to the client as they came.
   */
  details?: Record<string, unknown>;
}

export interface ChoiceMessage {
  role: string;
  content: string | null;
  [extra: string]: unknown;
}

/** A whole answer, OpenAI-shaped but for `usage`, which is canonical. */
export interface Completion {
  id?: string;
  object: "chat.completion";
  created?: number;
  model?: string;
  choices: Array<{
    index: number;
    message: ChoiceMessage;
    finish_reason: FinishReason | null;
    [extra: string]: unknown;
  }>;
  /** absent when the upstream reported none; the relay then estimates */
  usage?: Usage | undefined;
  /**
   * The upstream's answer in the client API's own form, when the call carried a native
   * request the adapter spoke (see UpstreamCall.native); the fields above still say what
   * is charged and reviewed.
   */
  native?: Record<string, unknown> | undefined;
  [extra: string]: unknown;
}

/** One piece of a streamed answer, OpenAI-shaped but for `usage`, which is canonical. */
export interface Chunk {
  id?: string;
  object: "chat.completion.chunk";
  created?: number;
  model?: string;
  choices: Array<{
    index: number;
    delta: { role?: string; content?: string | null; [extra: string]: unknown };
    finish_reason: FinishReason | null;
    [extra: string]: unknown;
  }>;
  usage?: Usage | undefined;
  /**
   * Usage the upstream reported before its final figures (Anthropic's `message_start`: the
   * prompt's input and cache counts, the output so far), on the first chunk after it. Never
   * sent to a client: the relay takes it off (src/relay/stream/meter.ts) and charges a stream
   * it stops or loses on the upstream's prompt figure rather than a local estimate.
   */
  usageSoFar?: Usage | undefined;
  /**
   * The upstream's events in the client API's own form that this chunk stands for, in order
   * (a native call only). Events with no canonical content come on chunks without choices.
   */
  native?: NativeEvent[] | undefined;
  [extra: string]: unknown;
}

/** One event of a native stream: its SSE event name and its parsed data. */
export interface NativeEvent {
  event: string;
  data: Record<string, unknown>;
}
