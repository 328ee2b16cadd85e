// A chat completion as the client gets it: OpenAI's usage object, the whole `chat.completion`
// body restamped with our id and the public model, and the body of an answer content safety
// withheld.
import type { Completion, Usage } from "../../domain/completion.ts";
import type { ReviewOutcome } from "../../safety/policy.ts";
import { safetyExtension, withheldNotice } from "../../safety/withheld.ts";
import type { AnswerUsage, JsonAnswer } from "../types.ts";
import { completionId } from "./chunk-stamp.ts";

/** OpenAI's usage object for the client: the figures as charged, after the upstream's detail fields if given. */
export function clientUsage(usage: AnswerUsage, details?: Usage["details"]) {
  return {
    ...details,
    prompt_tokens: usage.prompt,
    completion_tokens: usage.completion,
    total_tokens: usage.prompt + usage.completion,
  };
}

/** The `chat.completion` body: the upstream's completion with our id, the public model and usage. */
export function completionBody(answer: JsonAnswer): string {
  const body = answer.completion as Record<string, unknown>;
  body.id = completionId(answer.requestId);
  body.object = "chat.completion";
  body.created ??= Math.floor(answer.startedAt / 1000);
  body.model = answer.model;
  body.usage = clientUsage(answer.usage, answer.usage.reported?.details);
  if (answer.withheld)
    return JSON.stringify(
      withheldCompletion(answer.completion, body.usage, answer.withheld, withheldNotice(answer.requestId)),
    );
  return JSON.stringify(body);
}

/** A flagged completion as the client gets it: usage and ids kept, every model text replaced. */
function withheldCompletion(completion: Completion, usage: unknown, outcome: ReviewOutcome, notice: string) {
  return {
    id: completion.id,
    object: "chat.completion",
    created: completion.created,
    model: completion.model,
    choices: completion.choices.map((c) => ({
      index: c.index,
      message: { role: "assistant", content: notice, refusal: null },
      logprobs: null,
      finish_reason: "content_filter",
    })),
    usage,
    safety: safetyExtension(outcome),
  };
}
