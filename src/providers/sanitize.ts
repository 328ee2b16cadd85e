// Upstream error messages reach clients; they must not carry the upstream's addresses,
// keys or tokens. This strips what looks like either and bounds the length.

const URL_RE = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>)]+/gi;
const HOST_PORT_RE =
  /\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\b[a-z0-9.-]+\.(?:internal|local|lan)(?::\d+)?\b/gi;
const SECRET_RE = /\b(?:sk|pk|rk|key|api|tok|bearer)[-_][A-Za-z0-9_-]{6,}\b|\bBearer\s+\S+/gi;
const LONG_TOKEN_RE = /\b[A-Za-z0-9_-]{32,}\b/g;
const MAX_LENGTH = 300;

export function sanitizeUpstreamMessage(message: string): string {
  const clean = message
    .replace(URL_RE, "[url]")
    .replace(SECRET_RE, "[redacted]")
    .replace(HOST_PORT_RE, "[host]")
    .replace(LONG_TOKEN_RE, "[redacted]")
    .replace(/\s+/g, " ")
    .trim();
  return clean.length > MAX_LENGTH ? `${clean.slice(0, MAX_LENGTH)}…` : clean;
}
