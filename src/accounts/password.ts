// Console passwords: scrypt (node:crypto) with a random salt per user, stored as
// `scrypt$N$r$p$salt$hash` (salt and hash in base64) so the cost can be raised later without
// invalidating existing hashes: each hash carries the parameters it was made with.
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

/** 2^15 × r 8: 32 MiB and some tens of milliseconds per hash, OWASP's floor for scrypt. */
const COST = { N: 2 ** 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Bounds on what a stored hash may ask for, so a corrupted row cannot exhaust memory. */
const MAX_N = 2 ** 20;
const MAX_R = 32;
const MAX_P = 16;

export const PASSWORD_MIN_LENGTH = 8;
/** Longer inputs are refused before hashing: nobody types them, and they cost work. */
export const PASSWORD_MAX_LENGTH = 1024;

function derive(password: string, salt: Buffer, length: number, cost: ScryptOptions): Promise<Buffer> {
  const { N = COST.N, r = COST.r, p = COST.p } = cost;
  // scrypt needs 128·N·r bytes; Node's default ceiling (32 MiB) is just below that for 2^15.
  const maxmem = 128 * N * r * p + 16 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(password, salt, length, { N, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Why a password is not acceptable, or null when it is. */
export function passwordProblem(password: string): string | null {
  if (password.length < PASSWORD_MIN_LENGTH) return `must be at least ${PASSWORD_MIN_LENGTH} characters`;
  if (password.length > PASSWORD_MAX_LENGTH) return `must be at most ${PASSWORD_MAX_LENGTH} characters`;
  return null;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, HASH_BYTES, COST);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

interface Parsed {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parse(stored: string): Parsed | null {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return null;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const valid =
    Number.isInteger(N) &&
    N > 1 &&
    N <= MAX_N &&
    (N & (N - 1)) === 0 &&
    Number.isInteger(r) &&
    r >= 1 &&
    r <= MAX_R &&
    Number.isInteger(p) &&
    p >= 1 &&
    p <= MAX_P;
  if (!valid) return null;
  const salt = Buffer.from(parts[4]!, "base64");
  const hash = Buffer.from(parts[5]!, "base64");
  if (!salt.length || hash.length < 16) return null;
  return { N, r, p, salt, hash };
}

/**
 * Made once per process, with the current cost: verifying against it spends the same work
 * as verifying a real user's password, so an unknown e-mail answers as slowly as a known one.
 */
let dummy: Promise<string> | undefined;

/**
 * True when `password` matches `stored`. With `stored` null (no such user) it still derives
 * a hash, against a dummy, and answers false: the time taken does not tell which e-mails exist.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  dummy ??= hashPassword(randomBytes(18).toString("base64"));
  const real = stored === null ? null : parse(stored);
  const used = real ?? parse(await dummy)!;
  const candidate = await derive(password.slice(0, PASSWORD_MAX_LENGTH + 1), used.salt, used.hash.length, {
    N: used.N,
    r: used.r,
    p: used.p,
  });
  const equal = timingSafeEqual(candidate, used.hash);
  return real !== null && equal;
}
