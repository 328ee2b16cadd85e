// API key format: "sk-" + 32 random bytes written in base62 (43 characters). Only the key's
// SHA-256 and a short display prefix are ever stored.
import { createHash, randomBytes, randomFillSync } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SECRET_BYTES = 32;
/** 62^43 > 2^256: 43 digits hold any 32 bytes */
const SECRET_CHARS = 43;
/** characters of the secret kept for display: enough to tell keys apart, too few to matter */
const PREFIX_CHARS = 6;
/** longest bearer token we hash; anything longer is not one of our keys */
const MAX_TOKEN_LENGTH = 200;

export function base62(bytes: Uint8Array, width: number): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString("hex") || "0"}`);
  let out = "";
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(width, "0");
}

export function hashKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export interface NewKey {
  secret: string;
  hash: string;
  prefix: string;
}

export function generateKey(): NewKey {
  const secret = `sk-${base62(randomBytes(SECRET_BYTES), SECRET_CHARS)}`;
  return { secret, hash: hashKey(secret), prefix: secret.slice(0, 3 + PREFIX_CHARS) };
}

const ID_CHARS = 14;
/** Random bytes for ids, drawn 4 KiB at a time as randomUUID does: one syscall per ~200 ids. */
const idPool = Buffer.alloc(4096);
let idPoolAt = idPool.length;

function idByte(): number {
  if (idPoolAt === idPool.length) {
    randomFillSync(idPool);
    idPoolAt = 0;
  }
  return idPool[idPoolAt++]!;
}

/** `n` random base62 characters: bytes map straight to characters, skipping those that would bias the alphabet (>= 248). */
function randomChars(n: number): string {
  let out = "";
  for (let i = 0; i < n; ) {
    const b = idByte();
    if (b < 248) {
      out += BASE62[b % 62];
      i++;
    }
  }
  return out;
}

/**
 * A random id with a readable type prefix, e.g. acc_3fK9x2LmQa7PzX (about 83 bits). Not a
 * secret; made without the BigInt conversion keys use.
 */
export function newId(kind: "acc" | "key" | "req" | "adm"): string {
  return `${kind}_${randomChars(ID_CHARS)}`;
}

/** Milliseconds in base36, fixed width: 9 characters last until the year 5188. */
const TIME_CHARS = 9;
/** Random characters after the time: about 65 bits, so ids made in one millisecond by any number of instances do not collide. */
const REQUEST_RANDOM_CHARS = 11;

/**
 * A call's request id, e.g. req_0mwwlyyxtjCO4txp67xL: the time in milliseconds (base36,
 * lowercase, so it sorts in time order under byte-wise and locale collations alike) then
 * random characters. It is the call records' primary key: ids in time order are appended at
 * the end of its index, where random ones land on a random page each, which SQLite then writes
 * again in every commit (measured: 27.5 vs 14.8 µs of CPU per record inserted,
 * docs/decisions/0020-speed.md).
 */
export function newRequestId(now: number = Date.now()): string {
  return `req_${now.toString(36).padStart(TIME_CHARS, "0")}${randomChars(REQUEST_RANDOM_CHARS)}`;
}

export type BearerResult = { kind: "missing" } | { kind: "token"; token: string };

/**
 * Reads the Authorization header. Anything that is not "Bearer <token>" counts as no key;
 * a token that cannot be one of our keys is still returned, so it is answered as unknown.
 */
export function parseBearer(header: string | string[] | undefined): BearerResult {
  if (typeof header !== "string") return { kind: "missing" };
  const space = header.indexOf(" ");
  if (space <= 0 || header.slice(0, space).toLowerCase() !== "bearer") return { kind: "missing" };
  const token = header.slice(space + 1).trim();
  if (!token) return { kind: "missing" };
  return { kind: "token", token };
}

/** Cheap shape check before hashing: refuses absurd tokens without touching the store. */
export function looksLikeKey(token: string): boolean {
  return token.length <= MAX_TOKEN_LENGTH && /^sk-[A-Za-z0-9_-]+$/.test(token);
}
