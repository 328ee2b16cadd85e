// Seeds a fresh, migrated store for the console benchmark: the accounts, keys and call records
// of bench/console-data.ts, the daily_usage rows and used_tokens counters that add up to
// them, console users with fresh random passwords (returned to the caller), and some tickets. Rows go in as big multi-row
// statements inside large transactions: node:sqlite prepared statements for SQLite,
// unnest()-ed array parameters (one round trip per 10,000 rows) for PostgreSQL.
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { Kysely, SqliteDialect, sql } from "kysely";
import pg from "pg";
import { createUser, newConsoleId } from "../src/accounts/users.ts";
import { startOfUtcDay, utcDay } from "../src/records/days.ts";
import { migrate, openStore, type Store } from "../src/store/db.ts";
import type { Database } from "../src/store/schema.ts";
import { openSqlite } from "../src/store/sqlite-adapter.ts";
import {
  type DayOfRecords,
  generateRecords,
  makeAccounts,
  RECORD_COLUMNS,
  Rng,
  type Row,
  type SeedAccount,
} from "./console-data.ts";

type PgType = "text" | "bigint" | "integer";
type Columns = readonly (readonly [string, PgType])[];

/** A store to seed or measure: a SQLite data folder (its gateway.sqlite) or a PostgreSQL database. */
export type StoreTarget = { kind: "sqlite"; dataDir: string } | { kind: "postgres"; url: string };

export function openTarget(target: StoreTarget): Store {
  return target.kind === "sqlite"
    ? openStore({ data_dir: target.dataDir })
    : openStore({ data_dir: "", database_url: target.url });
}

export interface SeedOptions {
  records: number;
  accounts: number;
  /** PRNG seed: the same seed gives the same shape */
  seed: number;
}

export interface BenchUser {
  id: string;
  email: string;
  password: string;
  role: "owner" | "member" | "admin";
  account_id: string;
}

export interface SeededAccount {
  id: string;
  name: string;
  plan_id: string;
  records: number;
  used_tokens: number;
  /** ids of its keys that are not deleted, busiest first */
  keys: string[];
}

/** What the benchmark needs to know about a seeded store, also saved beside a kept one. */
export interface SeedSummary {
  options: SeedOptions;
  /** the moment the records were generated up to: "today" is this one's UTC day */
  now: number;
  big: SeededAccount;
  small: SeededAccount;
  users: BenchUsers;
  counts: SeedCounts;
  timingsMs: Record<string, number>;
}

export interface BenchUsers {
  bigOwner: BenchUser;
  smallOwner: BenchUser;
  admin: BenchUser;
}

export interface SeedCounts {
  accounts: number;
  keys: number;
  records: number;
  recordsToday: number;
  dailyUsageRows: number;
  users: number;
  tickets: number;
  ticketMessages: number;
}

const DAILY_COLUMNS: Columns = [
  ["account_id", "text"],
  ["day", "text"],
  ["key_id", "text"],
  ["model", "text"],
  ["prompt_tokens", "bigint"],
  ["completion_tokens", "bigint"],
  ["total_tokens", "bigint"],
  ["calls", "bigint"],
];
const ACCOUNT_COLUMNS: Columns = [
  ["id", "text"],
  ["name", "text"],
  ["plan_id", "text"],
  ["quota_tokens", "bigint"],
  ["used_tokens", "bigint"],
  ["disabled", "integer"],
  ["created_at", "bigint"],
  ["safety", "text"],
];
const KEY_COLUMNS: Columns = [
  ["id", "text"],
  ["account_id", "text"],
  ["name", "text"],
  ["prefix", "text"],
  ["secret_hash", "text"],
  ["limit_tokens", "bigint"],
  ["used_tokens", "bigint"],
  ["disabled", "integer"],
  ["created_at", "bigint"],
  ["deleted_at", "bigint"],
];
const TICKET_COLUMNS: Columns = [
  ["id", "text"],
  ["account_id", "text"],
  ["kind", "text"],
  ["subject", "text"],
  ["status", "text"],
  ["description", "text"],
  ["problem_at", "bigint"],
  ["key_id", "text"],
  ["model", "text"],
  ["params", "text"],
  ["error", "text"],
  ["request_id", "text"],
  ["created_by", "text"],
  ["created_at", "bigint"],
  ["updated_at", "bigint"],
];
const MESSAGE_COLUMNS: Columns = [
  ["id", "text"],
  ["ticket_id", "text"],
  ["author_id", "text"],
  ["body", "text"],
  ["created_at", "bigint"],
];

/** Rows per transaction: big enough to amortise commits, small enough to keep the WAL small. */
const ROWS_PER_TRANSACTION = 100_000;

// ---------------------------------------------------------------------------
// Bulk writers
// ---------------------------------------------------------------------------

interface BulkSink {
  /** rows of one statement: insert() gets at most this many */
  batchRows(columns: Columns): number;
  insert(table: string, columns: Columns, rows: Row[]): Promise<void>;
  exec(statement: string): Promise<void>;
  close(): Promise<void>;
}

/** Multi-row INSERTs through prepared statements of up to ~30,000 parameters each. */
function sqliteSink(raw: DatabaseSync): BulkSink {
  // One statement per table and row count: Batcher sends full batches, so there are few.
  const statements = new Map<string, StatementSync>();
  return {
    batchRows: (columns) => Math.floor(30_000 / columns.length),
    async insert(table, columns, rows) {
      const id = `${table}:${rows.length}`;
      let stmt = statements.get(id);
      if (!stmt) {
        const one = `(${columns.map(() => "?").join(", ")})`;
        const names = columns.map((c) => c[0]).join(", ");
        stmt = raw.prepare(
          `insert into ${table} (${names}) values ${new Array(rows.length).fill(one).join(", ")}`,
        );
        statements.set(id, stmt);
      }
      stmt.run(...(rows.flat() as any[]));
    },
    async exec(statement) {
      raw.exec(statement);
    },
    async close() {},
  };
}

/** INSERT … SELECT FROM unnest(one array per column): COPY-like speed in plain SQL. */
function pgSink(client: pg.Client): BulkSink {
  return {
    batchRows: () => 10_000,
    async insert(table, columns, rows) {
      const names = columns.map((c) => c[0]).join(", ");
      const arrays = columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ");
      await client.query(
        `insert into ${table} (${names}) select * from unnest(${arrays})`,
        columns.map((_, c) => rows.map((row) => row[c])),
      );
    },
    async exec(statement) {
      await client.query(statement);
    },
    close: () => client.end(),
  };
}

/** Collects rows per table and hands the sink full batches; flush() sends the rest. */
class Batcher {
  readonly #sink: BulkSink;
  readonly #buffers = new Map<string, { columns: Columns; rows: Row[] }>();

  constructor(sink: BulkSink) {
    this.#sink = sink;
  }

  async add(table: string, columns: Columns, rows: Row[]): Promise<void> {
    let buffer = this.#buffers.get(table);
    if (!buffer) {
      buffer = { columns, rows: [] };
      this.#buffers.set(table, buffer);
    }
    for (const row of rows) buffer.rows.push(row);
    const size = this.#sink.batchRows(columns);
    while (buffer.rows.length >= size) await this.#sink.insert(table, columns, buffer.rows.splice(0, size));
  }

  async flush(): Promise<void> {
    for (const [table, buffer] of this.#buffers)
      if (buffer.rows.length) await this.#sink.insert(table, buffer.columns, buffer.rows.splice(0));
  }

  /** Commits what was added since the last commit (and opens the next transaction). */
  async commit(andBegin: boolean): Promise<void> {
    await this.flush();
    await this.#sink.exec("commit");
    if (andBegin) await this.#sink.exec("begin");
  }
}

interface SeedConnection {
  store: Store;
  sink: BulkSink;
  /** what the store does once the rows are in (checkpoint, statistics) */
  finish(): Promise<void>;
}

async function connect(target: StoreTarget): Promise<SeedConnection> {
  if (target.kind === "sqlite") {
    // One connection for both: Kysely (migrations, users, checks) and the raw bulk inserts.
    mkdirSync(target.dataDir, { recursive: true });
    const file = join(target.dataDir, "gateway.sqlite");
    const { database, raw } = openSqlite(file);
    // A throwaway store being built: no fsync per commit; the gateway opens it with its own settings.
    raw.exec("PRAGMA synchronous = OFF");
    raw.exec("PRAGMA cache_size = -262144");
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
    return {
      store: { db, dialect: "sqlite", location: file, close: () => db.destroy() },
      sink: sqliteSink(raw),
      // The gateway starts on a checkpointed file, as one that has been running a while would.
      finish: async () => void raw.exec("PRAGMA wal_checkpoint(TRUNCATE)"),
    };
  }
  const store = openTarget(target);
  const client = new pg.Client({ connectionString: target.url });
  await client.connect();
  return {
    store,
    sink: pgSink(client),
    // Autovacuum would analyse and vacuum a table that took a million inserts within a minute or
    // so; doing it now gives the planner the statistics and visibility map it would have.
    finish: async () => void (await client.query("vacuum analyze")),
  };
}

// ---------------------------------------------------------------------------
// Seeding
// ---------------------------------------------------------------------------

function dailyRows(day: DayOfRecords): Row[] {
  const rows: Row[] = [];
  for (const [id, [prompt, completion, total, calls]] of day.daily) {
    const [account, key, model] = id.split("\0");
    rows.push([account, day.day, key, model, prompt, completion, total, calls]);
  }
  return rows;
}

function describe(account: SeedAccount): SeededAccount {
  const keys = account.keys
    .filter((k) => k.deleted_at === null)
    .sort((a, b) => b.used_tokens - a.used_tokens)
    .map((k) => k.id);
  const { id, name, plan_id, records, used_tokens } = account;
  return { id, name, plan_id, records, used_tokens, keys };
}

async function createUsers(db: Kysely<Database>, big: SeedAccount, small: SeedAccount): Promise<BenchUsers> {
  const make = async (role: BenchUser["role"], account: SeedAccount, email: string): Promise<BenchUser> => {
    // A fresh random password per seeded store, kept only in the store's own folder.
    const password = randomBytes(15).toString("base64url");
    const user = await createUser(db, { account_id: account.id, email, role, password });
    return { id: user.id, email, password, role, account_id: account.id };
  };
  return {
    bigOwner: await make("owner", big, `owner@${big.name}.example`),
    smallOwner: await make("owner", small, `owner@${small.name}.example`),
    admin: await make("admin", small, "admin@gateway.example"),
  };
}

const TICKET_KINDS = ["problem", "problem", "problem", "plan_upgrade", "older_history", "extra_export"];
const TICKET_STATUSES = ["open", "answered", "answered", "closed", "closed", "closed"];

/** 0–6 tickets per account (more for big ones), 1–4 messages each, over the last 90 days. */
function makeTickets(
  rng: Rng,
  accounts: SeedAccount[],
  users: BenchUsers,
  now: number,
): { tickets: Row[]; messages: Row[] } {
  const tickets: Row[] = [];
  const messages: Row[] = [];
  const ownerOf = new Map([users.bigOwner, users.smallOwner].map((u) => [u.account_id, u.id]));
  const adminId = users.admin.id;
  accounts.forEach((account, i) => {
    const count = i < 10 ? rng.int(3, 6) : rng.int(0, 4);
    for (let t = 0; t < count; t++) {
      const id = newConsoleId("tkt");
      const createdAt = now - rng.int(0, 90 * 24) * 3_600_000;
      const kind = rng.pick(TICKET_KINDS);
      const author = ownerOf.get(account.id) ?? adminId;
      const replies = rng.int(1, 4);
      let at = createdAt;
      for (let m = 0; m < replies; m++) {
        at += rng.int(1, 48) * 3_600_000;
        messages.push([
          newConsoleId("msg"),
          id,
          m % 2 === 0 ? author : adminId,
          m % 2 === 0 ? "Could you have a look? The calls fail since this morning." : "We are on it.",
          Math.min(at, now),
        ]);
      }
      const key = account.keys[0]!;
      tickets.push([
        id,
        account.id,
        kind,
        kind === "problem" ? `Errors on ${key.name ?? "a key"}` : `Request: ${kind.replace("_", " ")}`,
        rng.pick(TICKET_STATUSES),
        "Seeded by the console benchmark.",
        kind === "problem" ? createdAt - 3_600_000 : null,
        kind === "problem" ? key.id : null,
        kind === "problem" ? account.models[0]! : null,
        kind === "problem" ? '{"temperature":0.7}' : null,
        kind === "problem" ? "502 upstream_error" : null,
        null,
        author,
        createdAt,
        Math.min(at, now),
      ]);
    }
  });
  return { tickets, messages };
}

export type Log = (line: string) => void;

/** Fills a fresh store (the target must exist and be empty); returns what the benchmark needs. */
export async function seedStore(target: StoreTarget, options: SeedOptions, log: Log): Promise<SeedSummary> {
  const timingsMs: Record<string, number> = {};
  let mark = performance.now();
  const lap = (name: string) => {
    const t = performance.now();
    timingsMs[name] = Math.round(t - mark);
    mark = t;
  };
  const conn = await connect(target);
  try {
    await migrate(conn.store);
    lap("migrate");
    const rng = new Rng(options.seed);
    const now = Date.now();
    const accounts = makeAccounts(rng, options.accounts, now);
    const shape = { records: options.records, days: 400, todayShare: 0.05 };
    let written = 0;
    let inTransaction = 0;
    let dailyUsageRows = 0;
    let recordsToday = 0;
    let nextReport = 200_000;
    const batcher = new Batcher(conn.sink);
    await conn.sink.exec("begin");
    for (const day of generateRecords(rng, accounts, shape, now)) {
      const daily = dailyRows(day);
      await batcher.add("call_records", RECORD_COLUMNS, day.rows);
      await batcher.add("daily_usage", DAILY_COLUMNS, daily);
      written += day.rows.length;
      inTransaction += day.rows.length;
      dailyUsageRows += daily.length;
      recordsToday = day.rows.length; // the last day generated is today
      if (inTransaction >= ROWS_PER_TRANSACTION) {
        await batcher.commit(true);
        inTransaction = 0;
      }
      if (written >= nextReport) {
        log(`  ${written.toLocaleString("en-US")} records…`);
        nextReport += 200_000;
      }
    }
    await batcher.commit(false);
    lap("records");

    // Accounts and keys last: their used_tokens are the sums of the records just written.
    await conn.sink.exec("begin");
    await batcher.add(
      "accounts",
      ACCOUNT_COLUMNS,
      accounts.map((a) => [a.id, a.name, a.plan_id, null, a.used_tokens, 0, a.created_at, null]),
    );
    const keys = accounts.flatMap((a) => a.keys);
    await batcher.add(
      "api_keys",
      KEY_COLUMNS,
      keys.map((k) => [
        k.id,
        k.account_id,
        k.name,
        k.prefix,
        k.secret_hash,
        k.limit_tokens,
        k.used_tokens,
        k.disabled,
        k.created_at,
        k.deleted_at,
      ]),
    );
    await batcher.commit(false);
    lap("accounts_keys");

    const big = accounts[0]!;
    const small = accounts[accounts.length - 1]!;
    const users = await createUsers(conn.store.db, big, small);
    lap("users");

    const { tickets, messages } = makeTickets(rng, accounts, users, now);
    await conn.sink.exec("begin");
    await batcher.add("tickets", TICKET_COLUMNS, tickets);
    await batcher.add("ticket_messages", MESSAGE_COLUMNS, messages);
    await batcher.commit(false);
    lap("tickets");

    await conn.finish();
    lap(target.kind === "sqlite" ? "checkpoint" : "vacuum_analyze");

    const counts: SeedCounts = {
      accounts: accounts.length,
      keys: keys.length,
      records: written,
      recordsToday,
      dailyUsageRows,
      users: 3,
      tickets: tickets.length,
      ticketMessages: messages.length,
    };
    return { options, now, big: describe(big), small: describe(small), users, counts, timingsMs };
  } finally {
    await conn.sink.close();
    await conn.store.close();
  }
}

// ---------------------------------------------------------------------------
// Checking what was seeded, from the store itself
// ---------------------------------------------------------------------------

export interface SeedCheck {
  records: number;
  recordsToday: number;
  zeroTokenRecords: number;
  /** accounts (and keys) whose used_tokens differ from the sum of their records */
  accountsOff: number;
  keysOff: number;
  /** accounts whose daily_usage tokens or calls differ from their records */
  dailyOff: number;
  /** today's daily_usage calls minus today's records */
  todayCallsOff: number;
  ms: number;
}

const n = (v: unknown) => Number(v ?? 0);

/** Counts and sums straight from the tables: the seed adds up, or the benchmark stops. */
export async function checkSeed(target: StoreTarget, now: number): Promise<SeedCheck> {
  const started = performance.now();
  const store = openTarget(target);
  const db = store.db;
  try {
    const todayStart = startOfUtcDay(now);
    const one = async <T>(q: ReturnType<typeof sql<T>>) => (await q.execute(db)).rows[0]!;
    const totals = await one(sql<{ records: unknown; today: unknown; zero: unknown }>`
      select count(*) as records,
             sum(case when created_at >= ${todayStart} then 1 else 0 end) as today,
             sum(case when total_tokens = 0 then 1 else 0 end) as zero
      from call_records`);
    const accountsOff = await one(sql<{ n: unknown }>`
      select count(*) as n from accounts a
      where a.used_tokens <> coalesce((select sum(total_tokens) from call_records r where r.account_id = a.id), 0)`);
    const keysOff = await one(sql<{ n: unknown }>`
      select count(*) as n from api_keys k
      where k.used_tokens <> coalesce((select sum(total_tokens) from call_records r where r.key_id = k.id), 0)`);
    const byAccount = await sql<{ account_id: string; tokens: unknown; calls: unknown }>`
      select account_id, sum(total_tokens) as tokens, count(*) as calls from call_records group by account_id`.execute(
      db,
    );
    const daily = await sql<{ account_id: string; tokens: unknown; calls: unknown }>`
      select account_id, sum(total_tokens) as tokens, sum(calls) as calls from daily_usage group by account_id`.execute(
      db,
    );
    const dailyBy = new Map(daily.rows.map((r) => [r.account_id, r]));
    let dailyOff = Math.abs(daily.rows.length - byAccount.rows.length);
    for (const r of byAccount.rows) {
      const d = dailyBy.get(r.account_id);
      if (!d || n(d.tokens) !== n(r.tokens) || n(d.calls) !== n(r.calls)) dailyOff++;
    }
    const todayDaily = await one(
      sql<{ calls: unknown }>`select sum(calls) as calls from daily_usage where day = ${utcDay(now)}`,
    );
    return {
      records: n(totals.records),
      recordsToday: n(totals.today),
      zeroTokenRecords: n(totals.zero),
      accountsOff: n(accountsOff.n),
      keysOff: n(keysOff.n),
      dailyOff,
      todayCallsOff: n(todayDaily.calls) - n(totals.today),
      ms: Math.round(performance.now() - started),
    };
  } finally {
    await store.close();
  }
}
