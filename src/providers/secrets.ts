// The upstream secrets the gateway holds (provider keys, extra headers' values, a moderation
// API's key), so that no upstream's words carry one to a client, a record or a log: an
// upstream that quotes the key it was sent (in an error message, a stream's error event)
// must not pass it on. Pattern matching alone (./sanitize.ts) misses secrets of other shapes,
// a password, base64 with `+` and `/`, a JWT, a dotted token; so each configured secret is
// redacted as itself and in the encodings an upstream may quote it in: base64 (standard and
// URL-safe, with and without padding, and as Basic credentials), percent-encoding, JSON
// escaping and hex.

/** Shorter values are not secrets worth the false positives (`true`, an org id). */
const MIN_LENGTH = 8;
const forms = new Set<string>();
/** the forms, longest first: a form inside another is replaced after it */
let ordered: string[] = [];

function add(form: string): void {
  if (form.length >= MIN_LENGTH && !forms.has(form)) forms.add(form);
}

/** Registers a secret the gateway sends upstream; idempotent. */
export function registerSecret(value: string | undefined): void {
  const secret = value?.trim();
  if (!secret || secret.length < MIN_LENGTH) return;
  const before = forms.size;
  const base64 = Buffer.from(secret, "utf8").toString("base64");
  for (const form of [
    secret,
    base64,
    base64.replace(/=+$/, ""),
    Buffer.from(secret, "utf8").toString("base64url"),
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
    JSON.stringify(secret).slice(1, -1).replace(/\//g, "\\/"),
    Buffer.from(secret, "utf8").toString("hex"),
  ])
    add(form);
  // Basic credentials carry it after a user name: its base64 shares no prefix with the key's,
  // so the key as the password of an empty user and of common ones is covered
  for (const user of ["", "api", "apikey", "user"]) {
    const basic = Buffer.from(`${user}:${secret}`, "utf8").toString("base64");
    add(basic);
    add(basic.replace(/=+$/, ""));
  }
  if (forms.size !== before) ordered = [...forms].sort((a, b) => b.length - a.length);
}

/** The text with every registered secret, in every form, replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  if (!ordered.length) return text;
  let out = text;
  for (const form of ordered) if (out.includes(form)) out = out.split(form).join("[redacted]");
  return out;
}

/** Forgets every secret (tests that register their own). */
export function clearSecrets(): void {
  forms.clear();
  ordered = [];
}
