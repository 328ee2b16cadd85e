// Every instance sharing a ledger holds a lease in the store (ledger_instances) and renews it
// every third of its length; the holds it made live as long as its lease. Each instance also
// sweeps: the holds of instances whose lease ran out (crashed, cut off) are released by the
// others, so what a dead instance held is free again within the lease and one sweep (20 s by
// default). Its committed records stay: charges went with them.
import { sql } from "kysely";
import type { Logger } from "pino";
import { type PeriodicJob, startPeriodicJob } from "../lib/periodic-job.ts";
import type { Store } from "../store/db.ts";
import { warnUnlessUnreachable } from "../store/reachability.ts";

export interface LeaseOptions {
  id: string;
  /** whether this instance shares rate limits through Redis */
  redis: boolean;
  leaseMs: number;
  logger: Logger;
  /** releases the holds of instances whose lease ran out; resolves with the tokens released */
  sweep(): Promise<number>;
}

export class InstanceLease {
  readonly #store: Store;
  readonly #options: LeaseOptions;
  #job: PeriodicJob | undefined;

  constructor(store: Store, options: LeaseOptions) {
    this.#store = store;
    this.#options = options;
  }

  get id(): string {
    return this.#options.id;
  }

  async start(): Promise<void> {
    const { id, redis, leaseMs, logger } = this.#options;
    await this.#claim();
    const others = await sql<{ n: number; shared: number }>`
      select count(*)::int as n, count(*) filter (where redis = 1)::int as shared from ledger_instances
      where id <> ${id} and heartbeat_at >= gateway_ledger_now() - ${leaseMs}`.execute(this.#store.db);
    const { n, shared } = others.rows[0]!;
    if (redis ? shared < n : shared > 0)
      logger.error(
        { instances: n + 1 },
        "instances on this store disagree about Redis (store.redis_url): those with it and those without keep separate ledgers, and together can overspend; give every instance the same configuration",
      );
    else if (n > 0 && !redis)
      logger.warn(
        { instances: n + 1 },
        `${n} other gateway instance(s) share this store: quotas and key limits hold across all of them, but without store.redis_url (REDIS_URL) each keeps its own rate-limit buckets, so a key's rpm and tpm apply per instance`,
      );
    this.#job = startPeriodicJob({
      intervalMs: Math.max(50, Math.floor(leaseMs / 3)),
      run: () => this.#renew(),
      onError: warnUnlessUnreachable(logger, "could not renew the ledger lease or sweep"),
    });
  }

  async #claim(): Promise<void> {
    await sql`insert into ledger_instances (id, started_at, heartbeat_at, redis)
      values (${this.#options.id}, gateway_ledger_now(), gateway_ledger_now(), ${this.#options.redis ? 1 : 0})
      on conflict (id) do update set heartbeat_at = excluded.heartbeat_at`.execute(this.#store.db);
  }

  async #renew(): Promise<void> {
    const { id, logger } = this.#options;
    const renewed =
      await sql`update ledger_instances set heartbeat_at = gateway_ledger_now() where id = ${id}`.execute(
        this.#store.db,
      );
    if (!renewed.numAffectedRows) {
      // Cut off longer than the lease: the others took this instance for dead and released
      // its holds. Calls in flight still commit their records (and charges).
      logger.warn("this instance's ledger lease had run out and its holds were released by the others");
      await this.#claim();
    }
    const released = await this.#options.sweep();
    if (released) logger.warn({ tokens: released }, "released the holds of a gateway instance that stopped");
  }

  /** Gives up the lease: this instance holds nothing any more. */
  async stop(): Promise<void> {
    await this.#job?.stop();
    await sql`delete from ledger_instances where id = ${this.#options.id}`.execute(this.#store.db);
  }
}
