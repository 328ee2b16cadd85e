// A fresh PostgreSQL database per test suite on the local server, dropped afterwards.
// The admin URL can be overridden with TEST_PG_ADMIN_URL.
import { randomBytes } from "node:crypto";
import pg from "pg";

const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `gw_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
