// The reviewer contract. A reviewer reads one text (model output, or the caller's messages)
// and says whether it may be released. The review policy runs the configured chain in order,
// bounds it with `safety.timeout_ms` and fails closed on any error.

/** What is being reviewed: the caller's messages before forwarding, or the model's output. */
export type ReviewStage = "input" | "output";

export interface ReviewRequest {
  /** the text to judge: every message text, or every text the model returned, joined by newlines */
  text: string;
  stage: ReviewStage;
  /**
   * For output reviews: the caller's last user message, for reviewers that judge the answer in
   * its context (the model judge). Never logged or recorded.
   */
  context?: string;
  /** aborted when the review's time is up or the client left; reviewers must stop then */
  signal: AbortSignal;
}

export interface ReviewVerdict {
  flagged: boolean;
  /** the categories that flagged, in the reviewer's vocabulary (e.g. "violence", "S1: violent crimes") */
  categories: string[];
}

export interface Reviewer {
  /** the config's `type`, for metrics and logs */
  readonly type: "rules" | "moderation-api" | "model-judge";
  /**
   * True for a reviewer that does no I/O (rules): it runs without the deadline machinery,
   * which costs more than its review and could not interrupt a synchronous one anyway.
   */
  readonly local?: boolean;
  /** Resolves with a verdict; rejects with ReviewerError when it cannot judge. */
  review(request: ReviewRequest): Promise<ReviewVerdict>;
  close?(): Promise<void>;
}

/** A reviewer could not reach a verdict (network, bad answer, status). The message is safe to log. */
export class ReviewerError extends Error {
  override name = "ReviewerError";
}
