// The call records' journal of an instance on PostgreSQL with Redis (decision 0040): each
// finished call's record is written to Redis, in a hash of this instance's own, before its
// answer completes, and the record writer commits the records behind the answers in batches
// (records_commit_ms): a commit costs PostgreSQL about as much for one record as for ten, and
// waiting for it made each answer wait a commit of one or two. Redis is where the journal
// outlives this process: killed before its commit, its records are committed by the instance
// that sweeps its holds (RedisLedger.sweep), with their charges, before the holds are released.
// Redis losing them (a restart) loses nothing: this process still holds them and commits them.
//
// The hash is not under the ledger's epoch: a record stays until a commit took it, whatever
// Redis lost meanwhile. A record found there that the store already holds (its commit landed and
// the process died before the hash was emptied) is skipped by request id.
import type { Reservation } from "../ledger/types.ts";
import type { RedisState } from "../store/redis-state.ts";
import type { CallRecord } from "./call-record.ts";
import type { Journal, JournaledRecord } from "./writer.ts";

/** The hash of `instance`'s journal under the gateway's Redis prefix ("*": every instance's, as a pattern). */
export function journalHash(prefix: string, instance: string): string {
  return `${prefix}records:${instance}`;
}

export class RedisRecordJournal implements Journal {
  readonly shared = true;
  readonly #redis: RedisState;
  readonly #instanceId: string;

  constructor(redis: RedisState, instanceId: string) {
    this.#redis = redis;
    this.#instanceId = instanceId;
  }

  #hash(instance: string): string {
    return journalHash(this.#redis.prefix, instance);
  }

  /** Writes the record (and its hold) to Redis; rejects when Redis does not take it. */
  async append(record: CallRecord, reservation: Reservation | undefined): Promise<void> {
    const entry: JournaledRecord = {
      record,
      ...(reservation
        ? {
            hold: {
              id: reservation.id,
              accountId: reservation.accountId,
              keyId: reservation.keyId,
              ...(reservation.session === undefined ? {} : { session: reservation.session }),
            },
          }
        : {}),
    };
    await this.#redis.client.hset(this.#hash(this.#instanceId), record.request_id, JSON.stringify(entry));
  }

  /** The batch's request ids: what remove() takes out once it is committed. */
  seal(batch: readonly CallRecord[]): string[] {
    return batch.map((r) => r.request_id);
  }

  /** The batch is committed: its records leave Redis. */
  async remove(requestIds: readonly string[]): Promise<void> {
    await this.removeLeft(this.#instanceId, requestIds);
  }

  /** Those records `instance` journaled are committed (by a sweep, when it is another's). */
  async removeLeft(instance: string, requestIds: readonly string[]): Promise<void> {
    if (requestIds.length) await this.#redis.client.hdel(this.#hash(instance), ...requestIds);
  }

  /** What another instance (a dead one) journaled and no commit took out yet. */
  async left(instance: string): Promise<JournaledRecord[]> {
    const entries = await this.#redis.client.hgetall(this.#hash(instance));
    return Object.values(entries).map((e) => JSON.parse(e) as JournaledRecord);
  }
}
