// Upstream error messages reach clients; they must not carry the upstream's addresses,
// keys or tokens. This strips the secrets the gateway holds (./secrets.ts), then what looks
// like an address or a key, and bounds the length.
import { redactSecrets } from "./secrets.ts";

const URL_RE = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>)]+/gi;
const HOST_PORT_RE =
  /\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\b[a-z0-9.-]+\.(?:internal|local|lan)(?::\d+)?\b/gi;
const IPV6_BRACKETED_RE = /\[[0-9a-f:.]*:[0-9a-f:.]*\](?::\d+)?/gi;
// colon-separated hex groups; looksLikeIpv6 then keeps only what has "::" or five or more
// groups, so times such as 12:30:45 stay
const IPV6_BARE_RE = /(?<![\w:])(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}(?![\w:])/gi;
const SECRET_RE = /\b(?:sk|pk|rk|key|api|tok|bearer)[-_][A-Za-z0-9_-]{6,}\b|\bBearer\s+\S+/gi;
const LONG_TOKEN_RE = /\b[A-Za-z0-9_-]{32,}\b/g;
const MAX_LENGTH = 300;
/** Regexes above are not all linear on adversarial input: bound what they see first. */
const MAX_INPUT = 4 * MAX_LENGTH;

function looksLikeIpv6(match: string): boolean {
  return match.includes("::") || match.split(":").length >= 5;
}

export function sanitizeUpstreamMessage(message: string): string {
  // the configured secrets first, whole: the patterns below could cut one and hide the rest
  const clean = redactSecrets(message.slice(0, MAX_INPUT + 512))
    .slice(0, MAX_INPUT)
    .replace(URL_RE, "[url]")
    .replace(SECRET_RE, "[redacted]")
    .replace(IPV6_BRACKETED_RE, "[host]")
    .replace(IPV6_BARE_RE, (m) => (looksLikeIpv6(m) ? "[host]" : m))
    .replace(HOST_PORT_RE, "[host]")
    .replace(LONG_TOKEN_RE, "[redacted]")
    .replace(/\s+/g, " ")
    .trim();
  return clean.length > MAX_LENGTH ? `${clean.slice(0, MAX_LENGTH)}…` : clean;
}

/** An upstream's error code, passed to clients only when it looks like one (`context_length_exceeded`). */
export function wireCode(code: unknown): string | undefined {
  return typeof code === "string" && /^[a-z][a-z0-9_]{0,63}$/.test(code) ? code : undefined;
}

/** An upstream's `param`, passed on only when it looks like a parameter path (`messages[0].content`). */
export function wireParam(param: unknown): string | undefined {
  return typeof param === "string" && /^[A-Za-z_][A-Za-z0-9_.[\]]{0,127}$/.test(param) ? param : undefined;
}
