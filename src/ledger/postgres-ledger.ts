// The ledger on PostgreSQL alone, shared by every instance on the store: each hold is one call
// of gateway_reserve (migrations 010, 015 and 023), atomic under the key's and the account's
// row locks (and a capped session's), tokens and money together; the record writer closes holds in the statement that
// commits their records and charges (StoreHolds), so the books cannot disagree. Waiters are
// woken by NOTIFY on a connection of their own.
import { type Kysely, sql } from "kysely";
import type pg from "pg";
import type { Logger } from "pino";
import { PG_APPLICATION, postgresDriver } from "../store/drivers.ts";
import { warnUnlessUnreachable } from "../store/reachability.ts";
import type { Database } from "../store/schema.ts";
import { type Attempt, SharedLedger } from "./shared-ledger.ts";
import type { HoldClosing, StoreHolds } from "./store-holds.ts";
import type { CostRule, Counter, LedgerSubject, MoneyCounter, Reservation, SessionCounter } from "./types.ts";

const CHANNEL = "gateway_ledger";

interface ReserveRow {
  status: Attempt["status"];
  tokens: number;
  remaining: number;
  reason: Attempt["reason"];
  reservation_id: number | null;
  waiter_id: number | null;
  key_used: number | null;
  account_used: number | null;
  nanos: number | null;
  account_nanos: number;
  key_nanos: number;
  key_spent: number | null;
  account_spent: number | null;
  session_nanos: number;
}

export class PostgresLedger extends SharedLedger implements StoreHolds {
  readonly #db: Kysely<Database>;
  readonly #url: string;
  readonly #instanceId: string;
  readonly #leaseMs: number;
  readonly #logger: Logger;
  #listener: pg.Client | undefined;
  #stopped = false;

  constructor(
    db: Kysely<Database>,
    options: {
      url: string;
      instanceId: string;
      waitMs: number;
      leaseMs: number;
      logger: Logger;
      now?: (() => number) | undefined;
    },
  ) {
    super({ waitMs: options.waitMs, now: options.now });
    this.#db = db;
    this.#url = options.url;
    this.#instanceId = options.instanceId;
    this.#leaseMs = options.leaseMs;
    this.#logger = options.logger;
  }

  /** Listens for closed holds, so waiters here learn of them at once. */
  async start(): Promise<void> {
    const client = new (postgresDriver().Client)({
      connectionString: this.#url,
      application_name: PG_APPLICATION.listener,
    });
    client.on("notification", (n) => {
      const [account, key] = (n.payload ?? "").split(" ");
      this.wake(account, key);
    });
    client.on("error", (err) => {
      // Waiters keep polling meanwhile; listen again on a new connection.
      warnUnlessUnreachable(this.#logger, "the ledger's notification connection failed; reconnecting")(err);
      this.#listener = undefined;
      void client.end().catch(() => undefined);
      if (!this.#stopped) setTimeout(() => void this.start().catch(() => undefined), 1_000).unref();
    });
    await client.connect();
    await client.query(`listen ${CHANNEL}`);
    this.#listener = client;
  }

  protected async attempt(
    subject: LedgerSubject,
    wanted: number,
    minimum: number,
    cost: CostRule | undefined,
    waiterId: number | undefined,
    waitMs: number,
  ): Promise<Attempt> {
    const session = subject.session;
    const { rows } =
      await sql<ReserveRow>`select * from gateway_reserve(${this.#instanceId}, ${subject.accountId},
      ${subject.keyId}, ${subject.accountQuota}, ${wanted}, ${minimum}, ${waiterId ?? null}, ${waitMs},
      ${cost?.fixed ?? null}, ${cost?.perToken ?? null}::float8, ${cost?.promptTokens ?? null}, ${this.month()},
      ${session?.id ?? null}, ${session?.limitTokens ?? null}, ${session?.budgetNanos ?? null})`.execute(
        this.#db,
      );
    const r = rows[0]!;
    return {
      status: r.status,
      tokens: Number(r.tokens),
      remaining: Number(r.remaining),
      reason: r.reason,
      ...(r.reservation_id !== null ? { reservationId: Number(r.reservation_id) } : {}),
      nanos: r.nanos === null ? null : Number(r.nanos),
      accountNanos: Number(r.account_nanos),
      keyNanos: Number(r.key_nanos),
      sessionNanos: Number(r.session_nanos),
      ...(r.waiter_id !== null ? { waiterId: Number(r.waiter_id) } : {}),
      ...(r.key_used !== null ? { keyUsed: Number(r.key_used) } : {}),
      ...(r.account_used !== null ? { accountUsed: Number(r.account_used) } : {}),
      ...(r.key_spent !== null ? { keySpent: Number(r.key_spent) } : {}),
      ...(r.account_spent !== null ? { accountSpent: Number(r.account_spent) } : {}),
    };
  }

  protected async unwait(waiterId: number): Promise<void> {
    await sql`select gateway_unwait(${waiterId})`.execute(this.#db);
  }

  protected async close(
    reservation: Reservation,
    _charge: number,
    _nanos: number,
    recorded: boolean,
  ): Promise<void> {
    // A recorded call's hold was closed with its record; anything else is released here.
    if (recorded) return;
    await sql`select gateway_ledger_close(${[reservation.id]}::bigint[], '{}', '{}', '{}', '{}')`.execute(
      this.#db,
    );
  }

  /** The batch's gateway_ledger_close ends the holds and charges the counters, keys then accounts in id order. */
  closing(): HoldClosing {
    return { ledger: "postgres" };
  }

  committed(reservations: readonly Reservation[]): void {
    this.closedInStore(reservations);
  }

  async inspect(kind: "account" | "key", id: string): Promise<Counter | undefined> {
    const row = await this.#db
      .selectFrom(kind === "key" ? "api_keys" : "accounts")
      .select(["used_tokens", "reserved_tokens"])
      .where("id", "=", id)
      .executeTakeFirst();
    return row && { used: Number(row.used_tokens), reserved: Number(row.reserved_tokens) };
  }

  async inspectMoney(kind: "account" | "key", id: string): Promise<MoneyCounter | undefined> {
    const row = await this.#db
      .selectFrom(kind === "key" ? "api_keys" : "accounts")
      .select(["spent_nanos", "month_spent_nanos", "spent_month", "reserved_nanos"])
      .where("id", "=", id)
      .executeTakeFirst();
    return (
      row && {
        spent: {
          total: Number(row.spent_nanos),
          month: Number(row.month_spent_nanos),
          monthKey: row.spent_month,
        },
        reserved: Number(row.reserved_nanos),
      }
    );
  }

  async inspectSession(keyId: string, sessionId: string): Promise<SessionCounter | undefined> {
    const row = await this.#db
      .selectFrom("session_usage")
      .select(["used_tokens", "reserved_tokens", "spent_nanos", "reserved_nanos"])
      .where("key_id", "=", keyId)
      .where("session_id", "=", sessionId)
      .executeTakeFirst();
    return (
      row && {
        used: Number(row.used_tokens),
        reserved: Number(row.reserved_tokens),
        spentNanos: Number(row.spent_nanos),
        reservedNanos: Number(row.reserved_nanos),
      }
    );
  }

  async openHolds(): Promise<number> {
    const row = await this.#db
      .selectFrom("ledger_reservations")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Releases the holds of instances whose lease ran out. */
  async sweep(): Promise<number> {
    const { rows } = await sql<{
      released: number;
    }>`select gateway_ledger_sweep(${this.#leaseMs}) as released`.execute(this.#db);
    return Number(rows[0]!.released);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.stopWaiting();
    await this.#listener?.end().catch(() => undefined);
  }
}
