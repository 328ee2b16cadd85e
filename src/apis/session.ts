// Which agent session a call belongs to, read from its request by the one rule every client
// API applies (issue #31): an explicit `x-session-id` header first, any client's; then Claude
// Code's session (its `x-claude-code-session-id` header, else the `session_id` inside the JSON
// string of `metadata.user_id`); then Codex's thread (its `session-id` header, else the
// Responses API's `prompt_cache_key` when the request says it is Codex's). An id that is not a
// bounded plain token is passed over as if absent: a session is bookkeeping the client offers,
// and a malformed one must never fail the call it came with.
import type { IncomingHttpHeaders } from "node:http";
import { type CallSession, SESSION_ID, type SessionClient } from "../domain/sessions.ts";

/** What a body may carry of a session, as each edge finds it in its own shape. */
export interface SessionHints {
  /** Messages: `metadata.user_id`, which Claude Code fills with a JSON string */
  metadataUserId?: unknown;
  /** Responses: `prompt_cache_key`, which Codex sets to its thread id */
  promptCacheKey?: unknown;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === "string" ? value.trim() : undefined;
}

function valid(id: unknown): id is string {
  return typeof id === "string" && SESSION_ID.test(id);
}

/** Claude Code's metadata.user_id: `{"device_id":…,"account_uuid":…,"session_id":…}` as a string. */
function claudeSessionOf(userId: unknown): string | undefined {
  // well above the three ids Claude Code puts there; a longer string is not its
  if (typeof userId !== "string" || userId.length > 1024 || !userId.startsWith("{")) return undefined;
  try {
    const parsed: unknown = JSON.parse(userId);
    const id =
      parsed !== null && typeof parsed === "object"
        ? (parsed as { session_id?: unknown }).session_id
        : undefined;
    return valid(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Codex names itself in `originator` (codex_exec, codex_cli_rs, …). */
function fromCodex(headers: IncomingHttpHeaders): boolean {
  return header(headers, "originator")?.startsWith("codex") === true;
}

/** The call's session, or null when its request names none (or only malformed ones). */
export function sessionOf(headers: IncomingHttpHeaders, hints: SessionHints = {}): CallSession | null {
  const found = (id: unknown, client: SessionClient) => (valid(id) ? { id, client } : undefined);
  return (
    found(header(headers, "x-session-id"), "header") ??
    found(header(headers, "x-claude-code-session-id"), "claude-code") ??
    found(claudeSessionOf(hints.metadataUserId), "claude-code") ??
    found(header(headers, "session-id"), "codex") ??
    (fromCodex(headers) ? found(hints.promptCacheKey, "codex") : undefined) ??
    null
  );
}
