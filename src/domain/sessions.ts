// The agent session a call belongs to, as the client named it (issue #31): its id, and which
// convention it came by. Imports nothing: the console's types read it.

/**
 * Where a session's id came from: `header` an explicit `x-session-id` any client may send,
 * `claude-code` Claude Code's session id, `codex` Codex's thread.
 */
export const SESSION_CLIENTS = ["header", "claude-code", "codex"] as const;
export type SessionClient = (typeof SESSION_CLIENTS)[number];

export interface CallSession {
  id: string;
  client: SessionClient;
}

/**
 * What a session id may be: the UUIDs and thread ids the agents send, and what a person
 * would type, bounded so an id is safe in a URL, a CSV cell and a Redis key.
 */
export const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
