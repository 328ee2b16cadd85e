// Upstream secrets at rest: a provider's keys and header values are stored encrypted under a
// key from the environment (GATEWAY_SECRET_KEY), never in the clear, so a copy of the
// database (a backup, a replica, a support dump) does not carry working upstream keys.
// AES-256-GCM: authenticated, so a tampered or mis-keyed value fails to open instead of
// decrypting to garbage sent upstream.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";

/** The environment variable the key is read from. */
export const SECRET_KEY_ENV = "GATEWAY_SECRET_KEY";
/** A passphrase shorter than this is too guessable to protect keys worth money. */
export const MIN_SECRET_KEY_LENGTH = 32;
const VERSION = "v1";

export class SecretBoxError extends Error {
  override name = "SecretBoxError";
}

export class SecretBox {
  readonly #key: Buffer;
  /** which key sealed a value: a short fingerprint, so a wrong key is told apart from a damaged value */
  readonly #fingerprint: string;

  constructor(passphrase: string) {
    if (passphrase.length < MIN_SECRET_KEY_LENGTH)
      throw new SecretBoxError(`${SECRET_KEY_ENV} must be at least ${MIN_SECRET_KEY_LENGTH} characters`);
    // the passphrase may be any text an operator generates: derive a key of the right size
    this.#key = Buffer.from(
      hkdfSync("sha256", passphrase, "chat-gateway", "catalog secrets v1", 32) as ArrayBuffer,
    );
    this.#fingerprint = createHash("sha256").update(this.#key).digest("base64url").slice(0, 8);
  }

  /** The box of the environment's key, or undefined when none is set. */
  static fromEnv(env: Record<string, string | undefined>): SecretBox | undefined {
    const passphrase = env[SECRET_KEY_ENV];
    return passphrase ? new SecretBox(passphrase) : undefined;
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), body].map((b) => b.toString("base64url"));
    return [VERSION, this.#fingerprint, ...parts].join(":");
  }

  open(sealed: string): string {
    const [version, fingerprint, iv, tag, body] = sealed.split(":");
    if (version !== VERSION || !iv || !tag || body === undefined)
      throw new SecretBoxError("a stored secret is not in a form this version reads");
    if (fingerprint !== this.#fingerprint)
      throw new SecretBoxError(`stored secrets were sealed under another ${SECRET_KEY_ENV}`);
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString(
        "utf8",
      );
    } catch {
      throw new SecretBoxError("a stored secret failed its integrity check");
    }
  }
}
