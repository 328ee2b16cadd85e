// Adapts node:sqlite's DatabaseSync to the interface Kysely's SqliteDialect expects
// (the better-sqlite3 shape), so SQLite needs no native addon.
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { SqliteDatabase, SqliteStatement } from "kysely";

const MAX_CACHED_STATEMENTS = 256;

export function openSqlite(file: string): { database: SqliteDatabase; raw: DatabaseSync } {
  const raw = new DatabaseSync(file);
  // WAL lets the CLI and the server use the file at once; synchronous=NORMAL keeps every
  // committed transaction across a process crash (the WAL is written before commit returns)
  // and only risks the last commits on power loss, at a fraction of FULL's fsync cost.
  // busy_timeout first: switching to WAL takes a lock, and a process opening the file while
  // another holds one (the CLI beside a running gateway) must wait for it, not fail.
  raw.exec("PRAGMA busy_timeout = 5000");
  raw.exec("PRAGMA journal_mode = WAL");
  raw.exec("PRAGMA synchronous = NORMAL");
  raw.exec("PRAGMA foreign_keys = ON");
  // Kysely prepares every query it runs; the same few SQL strings recur on the hot path,
  // so keep their prepared statements.
  const cache = new Map<string, SqliteStatement>();
  const database: SqliteDatabase = {
    close: () => raw.close(),
    prepare(sql: string): SqliteStatement {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = wrap(raw.prepare(sql));
        if (cache.size >= MAX_CACHED_STATEMENTS) cache.clear();
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
  return { database, raw };
}

function wrap(stmt: StatementSync): SqliteStatement {
  const reader = stmt.columns().length > 0;
  return {
    reader,
    all: (params) => stmt.all(...(params as any[])),
    run: (params) => {
      const r = stmt.run(...(params as any[]));
      return { changes: r.changes, lastInsertRowid: r.lastInsertRowid };
    },
    iterate: (params) => stmt.iterate(...(params as any[])) as IterableIterator<unknown>,
  };
}
