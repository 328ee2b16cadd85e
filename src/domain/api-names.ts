// The client APIs the gateway serves, by the names records (`api`) and metrics (the `api`
// label) use. Imports nothing: the console's types read it.
export const API_NAMES = ["chat.completions", "messages", "responses", "embeddings", "gemini"] as const;
export type ApiName = (typeof API_NAMES)[number];
