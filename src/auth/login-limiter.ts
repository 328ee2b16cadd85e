// Throttles console logins without turning the throttle into a lockout (second outside audit,
// item 4: five wrong passwords for an e-mail used to refuse the right one, from anywhere, for
// 15 minutes). An admitted attempt counts as a failure at once, before its password is
// checked, in three counters:
//
//   pair     the e-mail from this client address   5 free, then waits up to 15 min
//   address  every e-mail from this address        20 free, then waits up to 15 min
//   e-mail   the e-mail from every address          50 free, then waits up to 1 min; not
//            applied to an address that logged in as that e-mail within the last 30 days
//
// Past a counter's free failures, an attempt must wait after the counter's last failure (from
// when it was answered): 1 s, doubling with each further failure, up to the counter's cap.
// Sooner ones are refused (429 with retry-after) and not counted. A counter forgets one
// failure every 15 minutes. A successful login clears its pair (and trusts it) and takes its
// own count back from the address and the e-mail. So wrong passwords from one address never
// refuse the right one from another; guesses from one address slow down to about four an hour
// per e-mail and per address; and many addresses together get about one guess a minute at an
// e-mail, while the addresses its user logged in from are not slowed by them.
//
// The counters are rows of the store (login_throttle), which every instance of a gateway
// shares: an attempt is checked and counted in one transaction holding the counters' rows,
// so neither concurrent attempts nor several instances get more tries than one after another.
// An IPv6 client counts by its /64, the block one subscriber is usually given.
import { createHash } from "node:crypto";
import { isIPv4, isIPv6 } from "node:net";
import { type Kysely, sql } from "kysely";
import type { DialectName } from "../store/db.ts";
import type { Database } from "../store/schema.ts";

type Db = Kysely<Database>;

export interface LoginGate {
  /** failures that cost no wait */
  free: number;
  /** the longest wait after a failure */
  capMs: number;
}

export interface LoginLimits {
  pair: LoginGate;
  address: LoginGate;
  email: LoginGate;
  /** the first wait past a counter's free failures; each further failure doubles it */
  baseMs: number;
  /** a counter forgets one failure per this long */
  forgetMs: number;
  /** a successful login lets its address's attempts at that e-mail past the e-mail counter this long */
  trustMs: number;
}

const MINUTE = 60_000;

export const LOGIN_LIMITS: LoginLimits = {
  pair: { free: 5, capMs: 15 * MINUTE },
  address: { free: 20, capMs: 15 * MINUTE },
  email: { free: 50, capMs: MINUTE },
  baseMs: 1_000,
  forgetMs: 15 * MINUTE,
  trustMs: 30 * 24 * 60 * MINUTE,
};

/** A counter holds at most this many failures over its free ones: 2^20 s is past any cap. */
const MAX_OVER_FREE = 20;
/** rows nothing counts in any more are deleted at most this often per process, on an attempt */
const PURGE_EVERY_MS = 10 * MINUTE;

type Gate = "pair" | "address" | "email";
const GATES: readonly Gate[] = ["pair", "address", "email"];

interface Counter {
  level: number;
  last_at: number;
  trusted_until: number | null;
}

/**
 * What a client address counts as: an IPv4 address (an IPv4-mapped IPv6 one too) as itself,
 * an IPv6 address by its /64.
 */
export function clientSource(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (mapped && isIPv4(mapped)) return mapped;
  if (!isIPv6(ip)) return ip;
  // the eight groups, "::" filled with zeros (an embedded IPv4 address is the last two)
  const groups = (part: string) =>
    part ? part.split(":").flatMap((g) => (g.includes(".") ? ["0", "0"] : [g])) : [];
  const [head = "", tail] = ip.split("%")[0]!.split("::");
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  const prefix = all.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16));
  return `${prefix.join(":")}::/64`;
}

function rowKey(subject: string): string {
  return createHash("sha256").update(subject).digest("base64url");
}

export class LoginLimiter {
  readonly #db: Db;
  readonly #postgres: boolean;
  readonly #limits: LoginLimits;
  #lastPurge = 0;

  constructor(db: Db, dialect: DialectName, limits: LoginLimits = LOGIN_LIMITS) {
    this.#db = db;
    this.#postgres = dialect === "postgres";
    this.#limits = limits;
  }

  #keys(email: string, address: string): Record<Gate, string> {
    const source = clientSource(address);
    return {
      pair: rowKey(`pair\n${email}\n${source}`),
      address: rowKey(`address\n${source}`),
      email: rowKey(`email\n${email}`),
    };
  }

  /** The failures a counter still holds at `now`. */
  #level(c: Counter | undefined, now: number): number {
    if (!c) return 0;
    return Math.max(0, c.level - Math.max(0, now - c.last_at) / this.#limits.forgetMs);
  }

  /** How long until the counters admit an attempt (0: now). */
  #wait(counters: Map<string, Counter>, keys: Record<Gate, string>, now: number): number {
    const pair = counters.get(keys.pair);
    const trusted = (pair?.trusted_until ?? 0) > now;
    let wait = 0;
    for (const gate of GATES) {
      if (gate === "email" && trusted) continue;
      const c = counters.get(keys[gate]);
      const { free, capMs } = this.#limits[gate];
      // a failure counts until it is wholly forgotten
      const failures = Math.ceil(this.#level(c, now) - 1e-9);
      if (!c || failures < free) continue;
      const delay = Math.min(capMs, this.#limits.baseMs * 2 ** (failures - free));
      wait = Math.max(wait, c.last_at + delay - now);
    }
    return wait;
  }

  async #read(db: Db, keys: Record<Gate, string>, lock: boolean): Promise<Map<string, Counter>> {
    let query = db
      .selectFrom("login_throttle")
      .select(["key", "level", "last_at", "trusted_until"])
      .where("key", "in", Object.values(keys))
      .orderBy("key");
    // the rows in one order, so two attempts never wait for each other's locks
    if (lock && this.#postgres) query = query.forUpdate();
    const rows = await query.execute();
    return new Map(rows.map((r) => [r.key, r]));
  }

  /**
   * Admits an attempt and counts it as a failure in the same step, or refuses it:
   * `retryAfterMs` is 0 when admitted, else how long until an attempt would be.
   */
  async attempt(email: string, address: string, now = Date.now()): Promise<{ retryAfterMs: number }> {
    const keys = this.#keys(email, address);
    // refused on a read alone: a flood of refused attempts takes no lock and writes nothing
    const seen = this.#wait(await this.#read(this.#db, keys, false), keys, now);
    if (seen > 0) return { retryAfterMs: Math.ceil(seen) };
    if (now - this.#lastPurge >= PURGE_EVERY_MS) {
      this.#lastPurge = now;
      await this.purge(now);
    }
    const wait = await this.#db.transaction().execute(async (trx) => {
      const ordered = Object.values(keys).sort();
      await trx
        .insertInto("login_throttle")
        .values(ordered.map((key) => ({ key, level: 0, last_at: now, trusted_until: null })))
        .onConflict((oc) => oc.column("key").doNothing())
        .execute();
      const counters = await this.#read(trx, keys, true);
      const wait = this.#wait(counters, keys, now);
      if (wait > 0) return wait;
      for (const gate of GATES) {
        const max = this.#limits[gate].free + MAX_OVER_FREE;
        const level = Math.min(max, this.#level(counters.get(keys[gate]), now) + 1);
        await trx
          .updateTable("login_throttle")
          .set({ level, last_at: now })
          .where("key", "=", keys[gate])
          .execute();
      }
      return 0;
    });
    return { retryAfterMs: Math.ceil(wait) };
  }

  /**
   * The attempt's password was wrong (or its e-mail unknown): the backoff runs from now, when
   * the client is told, rather than from the attempt's admission, a password check ago.
   */
  async failed(email: string, address: string, now = Date.now()): Promise<void> {
    // A row at a time, in key order: one statement updating several rows locks them in the
    // order it finds them, and against an attempt holding them in key order (FOR UPDATE) that
    // deadlocks on PostgreSQL, which then fails one of the two (a 500 under a burst of logins).
    for (const key of Object.values(this.#keys(email, address)).sort())
      await this.#db
        .updateTable("login_throttle")
        .set({ last_at: sql<number>`case when last_at < ${now} then ${now} else last_at end` })
        .where("key", "=", key)
        .execute();
  }

  /**
   * A successful login: its pair's failures are cleared and the pair is trusted (past the
   * e-mail counter) for `trustMs`; the address and the e-mail take back the count of this
   * attempt only, so others' failures stay counted.
   */
  async succeed(email: string, address: string, now = Date.now()): Promise<void> {
    const keys = this.#keys(email, address);
    await this.#db
      .updateTable("login_throttle")
      .set({ level: 0, trusted_until: now + this.#limits.trustMs })
      .where("key", "=", keys.pair)
      .execute();
    // a level is stored as of its last failure: one less there is one less now (both floor at 0)
    for (const key of [keys.address, keys.email].sort()) // a row at a time: see failed()
      await this.#db
        .updateTable("login_throttle")
        .set({ level: sql<number>`case when level > 1 then level - 1 else 0 end` })
        .where("key", "=", key)
        .execute();
  }

  /** Deletes the rows that count nothing any more and trust no one; how many. */
  async purge(now = Date.now()): Promise<number> {
    const highest = Math.max(...GATES.map((g) => this.#limits[g].free)) + MAX_OVER_FREE;
    const r = await this.#db
      .deleteFrom("login_throttle")
      .where("last_at", "<", now - highest * this.#limits.forgetMs)
      .where((eb) => eb.or([eb("trusted_until", "is", null), eb("trusted_until", "<", now)]))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
