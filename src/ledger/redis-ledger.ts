// The ledger shared through Redis, with PostgreSQL as the truth: each hold is one Lua script
// (check and hold, atomic across instances, about 0.3 ms), journaled in the store
// (ledger_reservations, rows gathered a few ms) while the call goes upstream, before its
// answer; the record writer ends the journal row in the statement that commits the record and
// its charge, marking the row with the charge, then the hold is closed in Redis (a commit's
// holds in one script). The charged row goes with a later commit of this instance; if the
// instance dies first, the sweep applies the charge to Redis.
//
// Redis holds, per epoch (see redis-state.ts): per account and key its consumption `u` and
// holds `r`, its spending in nanodollars (`st` in total, `sm` in the month `mk`) and the money
// its holds hold `rn`; per instance its holds, each with the subjects it is counted in and
// the money it holds against each; the queues of waiting requests. When an epoch starts
// empty, each account and key is seeded the first time a call needs it, from one snapshot of
// the store: its consumption and spending and the journaled holds on it (with their money). A
// hold marks which subjects count it, so a charge (tokens and money) is added to exactly the
// subjects that did not see it in their seed. A hold made while an epoch ended is in the store
// before the new epoch's first seed: its row must land within JOURNAL_MS of the hold (or its
// call is refused and charged nothing), and a young epoch's seeds wait twice that while other
// instances live, so the hold costs two round trips of Redis (hold, close), not a third to
// check the epoch.
// Budgets come with each call (as the quota and key limit do), the month from this process's
// clock. A capped agent session is a third subject of the hold (its own key, only for calls
// under its key's per-session caps), seeded from session_usage and the holds journaled on it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Kysely, sql } from "kysely";
import type { Logger } from "pino";
import { type PeriodicJob, startPeriodicJob } from "../lib/periodic-job.ts";
import type { Store } from "../store/db.ts";
import { CHECK_EPOCH, RedisState, type Reply } from "../store/redis-state.ts";
import type { Database } from "../store/schema.ts";
import { ReservationLog } from "./reservation-log.ts";
import { type Attempt, type Closing, SharedLedger } from "./shared-ledger.ts";
import type { HoldClosing, StoreHolds } from "./store-holds.ts";
import type {
  CostRule,
  Counter,
  LedgerSubject,
  MoneyBudget,
  MoneyCounter,
  Reservation,
  SessionCounter,
  SessionSubject,
} from "./types.ts";

/** A script of ./lua/ as Redis runs it: the epoch check, then the parts it is made of. */
function script(...parts: string[]): string {
  return (
    CHECK_EPOCH +
    parts.map((name) => readFileSync(join(import.meta.dirname, "lua", `${name}.lua`), "utf8")).join("")
  );
}

// Each script's KEYS, ARGV and answer are described at the top of its file.
const RESERVE_LUA = script("state", "money", "reserve");
const SEED_LUA = script("state", "seed");
const SETTLE_LUA = script("state", "settle");
const UNWAIT_LUA = script("unwait");
const SWEEP_LUA = script("state", "sweep");

/**
 * A hold's journal row must land this soon after its hold was asked for, or its call is refused
 * and charged nothing. A new epoch's seeds wait twice this (when other instances live): by then
 * every hold an earlier epoch granted is journaled or charges nothing, so no seed can miss one
 * that charges (decisions 0037, 0043).
 */
const JOURNAL_MS = 1_000;

/** the most holds one close script takes: about 20 µs of Redis each */
const SETTLE_BATCH = 200;

/** How long the rows of holds closed in Redis wait for a commit to take them out before they go alone. */
const CLEANUP_MS = 1_000;

/** A budget as the scripts take it: limit (-1: none) and period. */
function budgetArgs(budget: MoneyBudget | null): [number, string] {
  return budget ? [budget.limit, budget.period] : [-1, "none"];
}

/** A capped session's caps as the scripts take them (-1: none); nothing for a call without one. */
function sessionArgs(session: SessionSubject | undefined): (string | number)[] {
  return session ? [session.id, session.limitTokens ?? -1, session.budgetNanos ?? -1] : [];
}

/** What the ledger's subjects are named by: a hold's account, key and capped session. */
interface Holder {
  accountId: string;
  keyId: string;
  session?: string | undefined;
}

export class RedisLedger extends SharedLedger implements StoreHolds {
  readonly #redis: RedisState;
  readonly #db: Kysely<Database>;
  readonly #reservations: ReservationLog;
  readonly #instanceId: string;
  readonly #leaseMs: number;
  readonly #logger: Logger;
  /** this instance's numbering of its holds; unique with the instance id */
  #nextHold = 1;
  /** the longest a hold's journal row may take to land (JOURNAL_MS unless a test says) */
  readonly #journalMs: number;
  /**
   * This instance's holds being asked for or journaled, each settled once its row has landed
   * or it holds nothing: a seed waits for them, so it misses none of this instance's holds.
   */
  readonly #asking = new Set<Promise<void>>();
  /** holds whose journal row is charged and which closed in Redis: the row can go */
  #settled = new Set<number>();
  /** the next look for rows of closed holds that no commit took (#cleanUp) */
  #cleanup: NodeJS.Timeout | undefined;
  /** commits what a dead instance journaled and no commit took out (the record writer's commitLeft) */
  #commitLeft: ((instance: string) => Promise<unknown>) | undefined;
  /** those the writer's current commit deletes */
  #deleting: number[] = [];
  /** closes Redis could not take (unreachable, timed out), retried until they land */
  readonly #unclosed = new Map<
    number,
    { reservation: Reservation; charge: number; nanos: number; recorded: boolean }
  >();
  #retrying: PeriodicJob | undefined;
  readonly #onMessage = (channel: string, message: string) => {
    if (channel !== this.#redis.channel) return;
    const [account, key] = message.split(" ");
    if (account) this.wake(account, key);
    else this.wake();
  };

  constructor(
    redis: RedisState,
    store: Store,
    options: {
      url: string;
      instanceId: string;
      waitMs: number;
      leaseMs: number;
      logger: Logger;
      now?: (() => number) | undefined;
      journalMs?: number;
    },
  ) {
    super({ waitMs: options.waitMs, now: options.now });
    this.#journalMs = options.journalMs ?? JOURNAL_MS;
    this.#redis = redis;
    this.#db = store.db;
    this.#reservations = new ReservationLog(options.url);
    this.#instanceId = options.instanceId;
    this.#leaseMs = options.leaseMs;
    this.#logger = options.logger;
  }

  async start(): Promise<void> {
    this.#redis.subscriber.on("message", this.#onMessage);
    // Subscribes when Redis answers (and again after every reconnect): a gateway may start
    // while Redis is down, refusing calls until it is back.
    void this.#redis.subscriber.subscribe(this.#redis.channel).catch(() => undefined);
  }

  /** Redis's keys for a subject and an instance's holds (this instance's by default). */
  #keys(epoch: string, s: Holder, instance = this.#instanceId) {
    const k = (name: string) => this.#redis.key(epoch, name);
    return {
      account: k(`s:a:${s.accountId}`),
      key: k(`s:k:${s.keyId}`),
      /** only for a hold under a capped session: none is an extra key of no call */
      session: s.session === undefined ? [] : [k(sessionName(s.keyId, s.session))],
      holds: k(`h:${instance}`),
      swept: k(`x:${instance}`),
      accountQueue: k(`q:a:${s.accountId}`),
      keyQueue: k(`q:k:${s.keyId}`),
      waiters: k("w"),
      sequence: k("wseq"),
      instances: k("inst"),
    };
  }

  protected async attempt(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    cost: CostRule | undefined,
    waiterId: number | undefined,
    waitMs: number,
  ): Promise<Attempt> {
    const limit = subject.keyLimit ?? -1;
    const month = this.month();
    for (let tries = 0; ; tries++) {
      const hold = this.#nextHold++;
      let epoch = "";
      const asked = performance.now();
      let settle!: () => void;
      const asking = new Promise<void>((resolve) => {
        settle = resolve;
      });
      this.#asking.add(asking);
      const done = () => {
        this.#asking.delete(asking);
        settle();
      };
      /** the hold went on with its call: its row settles `asking` when it lands */
      let journaling = false;
      try {
        const reply = await this.#redis.run(RESERVE_LUA, (e) => {
          epoch = e;
          const k = this.#keys(e, holder(subject));
          return {
            keys: [
              k.account,
              k.key,
              k.holds,
              k.accountQueue,
              k.keyQueue,
              k.waiters,
              k.sequence,
              k.instances,
              ...k.session,
            ],
            args: [
              subject.accountQuota,
              limit,
              wanted,
              minimum,
              waiterId ?? "",
              waitMs,
              hold,
              subject.accountId,
              subject.keyId,
              this.#redis.channel,
              this.#instanceId,
              cost?.fixed ?? "",
              cost?.perToken ?? 0,
              cost?.promptTokens ?? 0,
              month,
              ...budgetArgs(subject.accountBudget),
              ...budgetArgs(subject.keyBudget),
              ...sessionArgs(subject.session),
            ],
          };
        });
        if (reply[0] === "seed" && tries < 4) {
          done(); // holds nothing: the others' seeds need not wait for it
          await this.#settledEpoch(epoch, Number(reply[2]));
          for (const which of String(reply[1])) await this.#seed(which as "a" | "k" | "s", subject);
          continue;
        }
        const [
          status,
          tokens,
          remaining,
          reason,
          accountUsed,
          keyUsed,
          waiter,
          nanos,
          an,
          kn,
          aSpent,
          kSpent,
          sn,
        ] = reply as [
          Attempt["status"],
          number,
          number,
          Attempt["reason"],
          number,
          number,
          string,
          number,
          number,
          number,
          number,
          number,
          number,
        ];
        if (!["ok", "refused", "held", "wait"].includes(status))
          throw new Error(`unexpected answer from the ledger script: ${String(status)}`);
        const attempt: Attempt = {
          status,
          tokens: Number(tokens),
          remaining: Number(remaining),
          reason,
          nanos: Number(nanos) < 0 ? null : Number(nanos),
          accountNanos: Number(an),
          keyNanos: Number(kn),
          sessionNanos: Number(sn ?? 0),
          accountUsed: Number(accountUsed),
          keyUsed: Number(keyUsed),
          accountSpent: Number(aSpent),
          keySpent: Number(kSpent),
          ...(waiter ? { waiterId: Number(waiter) } : {}),
        };
        if (status !== "ok") return attempt;
        journaling = true;
        return {
          ...attempt,
          reservationId: hold,
          landed: this.#journal(subject, hold, attempt, asked, done),
        };
      } finally {
        if (!journaling) done();
      }
    }
  }

  /**
   * Journals the hold in the store while its call goes upstream; the call's answer waits for
   * the row (Reservation.landed). A row that lands later than #journalMs after the hold was
   * asked for may have come after a new epoch's seeds (Redis lost its state meanwhile), which
   * would not count it, and a row that fails is in no seed: either way the call is refused and
   * charged nothing, so no seed can have missed a hold that charges. In time, no seed missed
   * it: seeds of a young epoch wait (#settledEpoch). `done` is called once the row settled.
   */
  #journal(
    subject: LedgerSubject,
    hold: number,
    a: Attempt,
    asked: number,
    done: () => void,
  ): () => Promise<boolean> {
    let waiting = true;
    const landing = this.#reservations
      .add({
        instance_id: this.#instanceId,
        hold,
        account_id: subject.accountId,
        key_id: subject.keyId,
        tokens: a.tokens,
        account_nanos: a.accountNanos ?? 0,
        key_nanos: a.keyNanos ?? 0,
        session_id: subject.session?.id ?? null,
        session_nanos: a.sessionNanos ?? 0,
        created_at: Date.now(),
      })
      .then(
        () => {
          if (performance.now() - asked <= this.#journalMs) return true;
          this.#logger.warn(
            { hold },
            "a hold's journal row landed late: its call is refused and charged nothing",
          );
          return false;
        },
        (err: unknown) => {
          this.#logger.warn(
            { err, hold },
            "could not journal a hold: its call is refused and charged nothing",
          );
          return false;
        },
      )
      .finally(() => {
        waiting = false;
        done();
      });
    return () => {
      if (waiting) this.#reservations.flushNow();
      return landing;
    };
  }

  /**
   * Before a seed reads the store: this instance's holds being asked for have landed in the
   * store or hold nothing, and when the epoch is younger than twice #journalMs (Redis's clock
   * `now`) and other instances live, the seed waits until it is that old. By then every hold an
   * earlier epoch granted, here or on another instance, is in the store or charges nothing.
   */
  async #settledEpoch(epoch: string, now: number): Promise<void> {
    this.#reservations.flushNow();
    await Promise.all([...this.#asking]);
    const young = RedisState.started(epoch) + 2 * this.#journalMs - now;
    if (!(young > 0)) return;
    const { rows } = await sql<{ others: boolean }>`select exists(select 1 from ledger_instances
        where id <> ${this.#instanceId} and heartbeat_at >= gateway_ledger_now() - ${this.#leaseMs}) as others`.execute(
      this.#db,
    );
    if (rows[0]?.others) await new Promise((r) => setTimeout(r, young));
  }

  /**
   * Seeds an account ('a'), key ('k') or capped session ('s') of the current epoch from one
   * snapshot of the store: its consumption and spending, and the holds journaled on it. A
   * session's row is made first, from its records, if no hold made it yet.
   */
  async #seed(which: "a" | "k" | "s", subject: LedgerSubject): Promise<void> {
    const session = subject.session?.id ?? "";
    if (which === "s")
      await sql`select gateway_session_row(${subject.accountId}, ${subject.keyId}, ${session})`.execute(
        this.#db,
      );
    const own =
      which === "s"
        ? sql`select 'u' as kind, used_tokens as tokens, null as instance_id, null as hold, null as account_id,
                 null as key_id, spent_nanos as n1, 0::bigint as n2, '' as spent_month, null as session_id,
                 0::bigint as n3
            from session_usage where key_id = ${subject.keyId} and session_id = ${session}`
        : sql`select 'u' as kind, used_tokens as tokens, null as instance_id, null as hold, null as account_id,
                 null as key_id, spent_nanos as n1, month_spent_nanos as n2, spent_month, null as session_id,
                 0::bigint as n3
            from ${sql.table(which === "a" ? "accounts" : "api_keys")}
            where id = ${which === "a" ? subject.accountId : subject.keyId}`;
    const mine =
      which === "a"
        ? sql`account_id = ${subject.accountId}`
        : which === "k"
          ? sql`key_id = ${subject.keyId}`
          : sql`key_id = ${subject.keyId} and session_id = ${session}`;
    const { rows } = await sql<{
      kind: string;
      tokens: number;
      instance_id: string;
      hold: number;
      account_id: string;
      key_id: string;
      /** u: spent in total and in the month spent_month; h: held against the account's and the key's budget */
      n1: number;
      n2: number;
      spent_month: string | null;
      /** h: its capped session, and what it holds against the session's budget */
      session_id: string | null;
      n3: number;
    }>`
      ${own}
      union all
      select 'h', tokens, instance_id, hold, account_id, key_id, account_nanos, key_nanos, null, session_id,
             session_nanos
        from ledger_reservations where ${mine} and hold is not null and charged_tokens is null`.execute(
      this.#db,
    );
    const ownRow = rows.find((r) => r.kind === "u");
    const used = Number(ownRow?.tokens ?? 0);
    const holds = rows.filter((r) => r.kind === "h");
    const name =
      which === "s"
        ? sessionName(subject.keyId, session)
        : `s:${which}:${which === "a" ? subject.accountId : subject.keyId}`;
    await this.#redis.run(SEED_LUA, (e) => {
      const subjectKey = this.#redis.key(e, name);
      const hashes = [...new Set(holds.map((h) => this.#redis.key(e, `h:${h.instance_id}`)))];
      const keys = [subjectKey, this.#redis.key(e, "inst"), ...hashes];
      return {
        keys,
        args: [
          which,
          used,
          Number(ownRow?.n1 ?? 0),
          Number(ownRow?.n2 ?? 0),
          ownRow?.spent_month ?? "",
          holds.length,
          ...holds.flatMap((h) => [
            // KEYS[1] is the epoch key, which run() puts first
            keys.indexOf(this.#redis.key(e, `h:${h.instance_id}`)) + 2,
            Number(h.hold),
            h.account_id,
            h.key_id,
            Number(h.tokens),
            h.instance_id,
            Number(h.n1),
            Number(h.n2),
            h.session_id ?? "",
            Number(h.n3),
          ]),
        ],
      };
    });
  }

  protected async unwait(waiterId: number, subject: LedgerSubject): Promise<void> {
    await this.#redis.run(UNWAIT_LUA, (e) => {
      const k = this.#keys(e, holder(subject));
      return {
        keys: [k.accountQueue, k.keyQueue, k.waiters],
        args: [waiterId, this.#redis.channel, subject.accountId, subject.keyId],
      };
    });
  }

  protected async close(
    reservation: Reservation,
    charge: number,
    nanos: number,
    recorded: boolean,
  ): Promise<void> {
    await this.closeMany([{ reservation, charge, nanos, recorded }]);
  }

  /** The holds of a records commit close in one round trip (SETTLE_LUA takes many). */
  protected override async closeMany(closing: readonly Closing[]): Promise<void> {
    // The journal row goes first: a seed in between would count the hold again, with nobody
    // left to close it. A row still on its way is awaited, or it would land after its delete.
    const released = closing.filter((c) => !c.recorded).map((c) => c.reservation);
    if (released.length) {
      await Promise.all(released.map((r) => r.landed?.()));
      await this.#forget(released.map((r) => r.id));
    }
    try {
      await this.#closeInRedis(closing);
    } catch (err) {
      // The call is done and, if recorded, charged in the store: it must not fail for this.
      // The hold keeps its room in Redis until the close lands (a close is idempotent: it
      // finds the hold or nothing); if this instance dies first, the sweep closes it.
      this.#logger.warn(
        { err, holds: closing.map((c) => c.reservation.id) },
        "could not close holds in Redis; retrying every second",
      );
      for (const c of closing) this.#unclosed.set(c.reservation.id, c);
      // a round waits up to the command timeout (2 s): the ticks meanwhile are skipped
      this.#retrying ??= startPeriodicJob({
        intervalMs: 1_000,
        run: () => this.#retryCloses(),
        onError: (err) => this.#logger.warn({ err }, "could not retry the closes Redis did not take"),
      });
      return;
    }
    // Its charge row stays until now: had this instance died before the close, a sweep would
    // have applied it. It goes with the writer's next transaction.
    for (const c of closing) if (c.recorded) this.#closedSettled(c.reservation.id);
  }

  #closedSettled(id: number): void {
    this.#settled.add(id);
    this.#cleanup ??= setTimeout(() => this.#cleanUp(new Set(this.#settled)), CLEANUP_MS).unref();
  }

  /**
   * The rows of holds closed in Redis that no commit took out since `candidates` were taken:
   * an instance whose calls stopped has no next commit to take its last ones.
   */
  #cleanUp(candidates: Set<number>): void {
    this.#cleanup = undefined;
    const ids = [...candidates].filter((id) => this.#settled.has(id));
    if (!ids.length) return;
    void this.#db
      .deleteFrom("ledger_reservations")
      .where("instance_id", "=", this.#instanceId)
      .where("hold", "in", ids)
      .execute()
      .then(
        () => {
          for (const id of ids) this.#settled.delete(id);
        },
        () => undefined, // the next commit, cleanup or stop takes them
      );
    if (this.#settled.size > ids.length)
      this.#cleanup ??= setTimeout(() => this.#cleanUp(new Set(this.#settled)), CLEANUP_MS).unref();
  }

  async #retryCloses(): Promise<void> {
    const closing = [...this.#unclosed.values()];
    try {
      await this.#closeInRedis(closing);
    } catch {
      return; // Redis still does not answer: they wait for the next round
    }
    for (const c of closing) {
      this.#unclosed.delete(c.reservation.id);
      if (c.recorded) this.#closedSettled(c.reservation.id);
    }
    if (this.#unclosed.size) return;
    void this.#retrying?.stop(); // not awaited: this may be the job's own round
    this.#retrying = undefined;
    this.#logger.info("the holds Redis could not close are closed");
  }

  /**
   * Closes holds of this instance, or of `instance` (a dead one's charges, by a sweep), each
   * with its charge: one script per SETTLE_BATCH holds, which keeps each short for Redis.
   */
  async #closeInRedis(
    closing: readonly { reservation: Holder & { id: number }; charge: number; nanos: number }[],
    instance = this.#instanceId,
  ): Promise<void> {
    const month = this.month();
    for (let from = 0; from < closing.length; from += SETTLE_BATCH) {
      const part = closing.slice(from, from + SETTLE_BATCH);
      await this.#redis.run(SETTLE_LUA, (e) => {
        const { holds, swept } = this.#keys(e, part[0]!.reservation, instance);
        const keys = [holds, swept];
        const args: (string | number)[] = [this.#redis.channel, month];
        for (const { reservation: r, charge, nanos } of part) {
          const k = this.#keys(e, r, instance);
          keys.push(k.account, k.key, k.accountQueue, k.keyQueue, ...k.session);
          args.push(r.id, charge, nanos, r.accountId, r.keyId, k.session.length);
        }
        return { keys, args };
      });
    }
  }

  async #forget(holds: number[]): Promise<void> {
    await this.#db
      .deleteFrom("ledger_reservations")
      .where("instance_id", "=", this.#instanceId)
      .where("hold", "in", holds)
      .execute();
  }

  /**
   * The batch marks its holds' journal rows with their charges, kept until the holds close in
   * Redis; the rows of holds closed there since the last commit go.
   */
  closing(): HoldClosing {
    this.#deleting = [...this.#settled];
    return { ledger: "redis", instance: this.#instanceId, done: this.#deleting };
  }

  committed(reservations: readonly Reservation[]): void {
    for (const id of this.#deleting) this.#settled.delete(id);
    this.#deleting = [];
    this.closedInStore(reservations);
  }

  commitLeftWith(commit: (instance: string) => Promise<unknown>): void {
    this.#commitLeft = commit;
  }

  /** What Redis holds for the account or key in the current epoch (undefined: not seeded). */
  async inspect(kind: "account" | "key", id: string): Promise<Counter | undefined> {
    const epoch = await this.#redis.epoch();
    const [u, r] = await this.#redis.client.hmget(this.#redis.key(epoch, `s:${kind[0]}:${id}`), "u", "r");
    return u === null ? undefined : { used: Number(u), reserved: Number(r) };
  }

  /** The same for money: spending and what holds hold, in nanodollars. */
  async inspectMoney(kind: "account" | "key", id: string): Promise<MoneyCounter | undefined> {
    const epoch = await this.#redis.epoch();
    const [st, sm, mk, rn] = await this.#redis.client.hmget(
      this.#redis.key(epoch, `s:${kind[0]}:${id}`),
      "st",
      "sm",
      "mk",
      "rn",
    );
    if (st === null) return undefined;
    return { spent: { total: Number(st), month: Number(sm), monthKey: mk ?? "" }, reserved: Number(rn) };
  }

  /** What Redis holds for a capped session in the current epoch (undefined: not seeded). */
  async inspectSession(keyId: string, sessionId: string): Promise<SessionCounter | undefined> {
    const epoch = await this.#redis.epoch();
    const [u, r, st, rn] = await this.#redis.client.hmget(
      this.#redis.key(epoch, sessionName(keyId, sessionId)),
      "u",
      "r",
      "st",
      "rn",
    );
    if (u === null) return undefined;
    return { used: Number(u), reserved: Number(r), spentNanos: Number(st), reservedNanos: Number(rn) };
  }

  /** Holds open anywhere: journaled in the store, or held in Redis. */
  async openHolds(): Promise<number> {
    const epoch = await this.#redis.epoch();
    const row = await this.#db
      .selectFrom("ledger_reservations")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("charged_tokens", "is", null)
      .executeTakeFirstOrThrow();
    let held = 0;
    for (const instance of await this.#redis.client.smembers(this.#redis.key(epoch, "inst")))
      held += await this.#redis.client.hlen(this.#redis.key(epoch, `h:${instance}`));
    return Math.max(Number(row.n), held);
  }

  /**
   * Releases the holds of instances whose lease ran out: first the charges of those whose
   * records committed (closed in Redis as their instance would have), then the rest in Redis,
   * then their journal rows, then in Redis again (a seed in between may have counted a journal
   * row once more).
   */
  async sweep(): Promise<number> {
    const live = new Set(
      (
        await sql<{ id: string }>`select id from ledger_instances
          where heartbeat_at >= gateway_ledger_now() - ${this.#leaseMs}`.execute(this.#db)
      ).rows.map((r) => r.id),
    );
    live.add(this.#instanceId);
    const epoch = await this.#redis.epoch();
    const inRedis = await this.#redis.client.smembers(this.#redis.key(epoch, "inst"));
    const inStore = (
      await sql<{ instance_id: string }>`select distinct instance_id from ledger_reservations`.execute(
        this.#db,
      )
    ).rows.map((r) => r.instance_id);
    let released = 0;
    for (const dead of new Set([...inRedis, ...inStore])) {
      if (live.has(dead)) continue;
      // Its records journaled behind their answers first, which mark their holds' rows with
      // their charges; should that fail, its holds stay held until a sweep manages it.
      await this.#commitLeft?.(dead);
      // Charged before released: a hold given back first would leave room its charge used.
      const charges = await this.#db
        .selectFrom("ledger_reservations")
        .select([
          "hold",
          "account_id",
          "key_id",
          "charged_tokens as tokens",
          "charged_nanos as nanos",
          "session_id",
        ])
        .where("instance_id", "=", dead)
        .where("charged_tokens", "is not", null)
        .execute();
      await this.#closeInRedis(
        charges.map((c) => ({
          reservation: {
            id: Number(c.hold),
            accountId: c.account_id,
            keyId: c.key_id,
            session: c.session_id ?? undefined,
          },
          charge: Number(c.tokens),
          nanos: Number(c.nanos),
        })),
        dead,
      );
      released += await this.#sweepRedis(dead);
      await this.#db
        .deleteFrom("ledger_reservations")
        .where("instance_id", "=", dead)
        .where("charged_tokens", "is", null)
        .execute();
      released += await this.#sweepRedis(dead);
      // only the charges applied above: one the instance committed since (it seemed dead and
      // was not) waits for the next sweep
      if (charges.length)
        await this.#db
          .deleteFrom("ledger_reservations")
          .where("instance_id", "=", dead)
          .where(
            "hold",
            "in",
            charges.map((c) => c.hold!),
          )
          .execute();
    }
    await sql`delete from ledger_instances where heartbeat_at < gateway_ledger_now() - ${this.#leaseMs}`.execute(
      this.#db,
    );
    return released;
  }

  async #sweepRedis(dead: string): Promise<number> {
    const epoch = await this.#redis.epoch();
    const entries = await this.#redis.client.hgetall(this.#redis.key(epoch, `h:${dead}`));
    const holds = Object.entries(entries).map(([id, e]) => {
      // state.lua's HOLD: account, key, …, then a capped session's id eighth
      const [accountId, keyId, , , , , , session] = e.split(" ");
      return { id, accountId: accountId!, keyId: keyId!, session };
    });
    const reply: Reply = await this.#redis.run(SWEEP_LUA, (e) => {
      const subjects: string[] = [];
      const index = (name: string) => {
        let i = subjects.indexOf(name);
        if (i < 0) i = subjects.push(name) - 1;
        return i + 5; // after the epoch key, holds, swept holds and instances
      };
      const args = holds.flatMap((h) => [
        h.id,
        index(this.#redis.key(e, `s:a:${h.accountId}`)),
        index(this.#redis.key(e, `s:k:${h.keyId}`)),
        h.session === undefined ? 0 : index(this.#redis.key(e, sessionName(h.keyId, h.session))),
      ]);
      return {
        keys: [
          this.#redis.key(e, `h:${dead}`),
          this.#redis.key(e, `x:${dead}`),
          this.#redis.key(e, "inst"),
          ...subjects,
        ],
        args: [dead, this.#redis.channel, holds.length, ...args],
      };
    });
    return Number(reply[1] ?? 0);
  }

  async stop(): Promise<void> {
    this.stopWaiting();
    // the holds of the records the writer's last flush committed (it waited for them; a commit
    // of a sweep's may have come since)
    await this.closesDone();
    clearTimeout(this.#cleanup); // what it would delete, the lines below do
    this.#redis.subscriber.off("message", this.#onMessage);
    // A last try; what is still open after it is closed by the others' sweep (charges included).
    await this.#retrying?.stop();
    if (this.#unclosed.size) await this.#retryCloses();
    // What no later commit will take; a row left here is only applied (to nothing) by a sweep.
    if (this.#settled.size)
      await this.#db
        .deleteFrom("ledger_reservations")
        .where("instance_id", "=", this.#instanceId)
        .where("hold", "in", [...this.#settled])
        .execute()
        .catch(() => undefined);
    await this.#reservations.close();
  }
}

/** A hold's subjects as Redis names them, from the call's subject. */
function holder(subject: LedgerSubject): Holder {
  return { accountId: subject.accountId, keyId: subject.keyId, session: subject.session?.id };
}

/** A capped session's subject: its key's, since two keys' sessions of one id are two sessions. */
function sessionName(keyId: string, sessionId: string): string {
  return `s:s:${keyId}:${sessionId}`;
}
