// Resolves a bearer token to its key and account. Hits are served from memory; the cache
// is dropped whenever the store's revision changes (see RevisionWatcher), so a key disabled
// or a limit changed by the CLI or another instance takes effect within one poll interval.
import type { Kysely } from "kysely";
import type { Account } from "../accounts/accounts.ts";
import { hashKey } from "../accounts/key-format.ts";
import { type ApiKey, findKeyByHash } from "../accounts/keys.ts";
import type { Database } from "../store/schema.ts";

export interface AuthContext {
  key: ApiKey;
  account: Account;
}

/** Unknown tokens are cached too (as null) so a flood of bad keys cannot reach the store. */
const MAX_ENTRIES = 50_000;

// Entries are found by the token itself: hashing it on every request (SHA-256, about 2 % of a
// call's CPU) is needed only to look it up in the store. The tokens live in this process's
// memory as every request's headers do, and go with the cache.

export class KeyCache {
  readonly #db: Kysely<Database>;
  #entries = new Map<string, AuthContext | null>();
  #pending = new Map<string, Promise<AuthContext | null>>();
  #generation = 0;

  constructor(db: Kysely<Database>) {
    this.#db = db;
  }

  resolve(token: string): Promise<AuthContext | null> | AuthContext | null {
    const hit = this.#entries.get(token);
    if (hit !== undefined) return hit;
    let pending = this.#pending.get(token);
    if (!pending) {
      pending = this.#load(token);
      this.#pending.set(token, pending);
    }
    return pending;
  }

  async #load(token: string): Promise<AuthContext | null> {
    const generation = this.#generation;
    try {
      const found = await findKeyByHash(this.#db, hashKey(token));
      // A load that raced with a clear() may carry stale data: use it once, don't keep it.
      if (generation === this.#generation) {
        if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
        this.#entries.set(token, found);
      }
      return found;
    } finally {
      this.#pending.delete(token);
    }
  }

  clear(): void {
    this.#generation++;
    this.#entries.clear();
  }
}
