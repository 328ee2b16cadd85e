// What a public model does: answer a conversation (chat completions, Messages, Responses) or
// embed texts (POST /v1/embeddings). A model is one or the other; each API refuses the other.
export const MODEL_KINDS = ["chat", "embedding"] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];
