// One chat completion as a client sends it, and what it got back: the status, the error code
// and message, the request id. For suites that count answers and refusals.
import { TEST_MODEL } from "./gateway.ts";

export interface Answer {
  status: number;
  code: string | null;
  message: string | null;
  requestId: string | null;
}

export async function chat(
  baseURL: string,
  secret: string,
  options: { content?: string; maxTokens?: number; signal?: AbortSignal } = {},
): Promise<Answer> {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: TEST_MODEL,
      max_tokens: options.maxTokens ?? 10,
      messages: [{ role: "user", content: options.content ?? "hi mock:tokens=3" }],
    }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const body = (await res.json()) as { error?: { code: string; message: string } };
  return {
    status: res.status,
    code: body.error?.code ?? null,
    message: body.error?.message ?? null,
    requestId: res.headers.get("x-request-id"),
  };
}

/**
 * The no-false-refusal measurement's request: 20 bytes of prompt (a bound of 60 with the
 * default overheads, 16 tokens as a chat-template upstream counts them) and 30 output tokens.
 */
export const ask = (baseURL: string, secret: string) =>
  chat(baseURL, secret, { content: "hello mock:tokens=30", maxTokens: 30 });
