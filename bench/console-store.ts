// The store a console benchmark run measures: seeded fresh, or copied from one a --keep run
// left behind. The measured run changes its store (retention deletes rows, logins add
// sessions), so a kept store is saved as it was right after seeding and every run works on
// its own copy: a file copy for SQLite, CREATE DATABASE … TEMPLATE for PostgreSQL.
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { ConsoleBenchOptions } from "./console-options.ts";
import { type Log, type SeedSummary, type StoreTarget, seedStore } from "./console-seed.ts";

const PG_ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const MANIFEST = "console-seed.json";

/** What a kept folder holds besides the store: how it was seeded and who can log in. */
interface Manifest {
  summary: SeedSummary;
  store: { kind: "sqlite"; file: string } | { kind: "postgres"; database: string };
}

export interface PreparedStore {
  target: StoreTarget;
  summary: SeedSummary;
  /** false when the store came from --reuse */
  seeded: boolean;
  /** the folder a --keep run leaves behind */
  keptAt: string | undefined;
  /** PostgreSQL: the kept database the folder names */
  keptDatabase?: string;
}

/**
 * Databases this run made that go when it ends, however it ends (also on Ctrl-C while
 * seeding): all of them but a seed handed over to --keep.
 */
const temporary = new Set<string>();

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

function databaseUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A new database, empty or a copy of a template (which must have no open connections). */
async function createDatabase(template?: string): Promise<string> {
  const name = `gw_bench_${randomBytes(6).toString("hex")}`;
  temporary.add(name);
  await admin((c) => c.query(`create database ${name}${template ? ` template ${template}` : ""}`));
  return name;
}

/** Drops the databases this run made and did not keep. */
export async function dropTemporaryDatabases(): Promise<void> {
  for (const name of temporary) {
    await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    temporary.delete(name);
  }
}

function writeManifest(dir: string, manifest: Manifest): void {
  // It holds the seeded users' passwords: readable by this user only.
  writeFileSync(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
}

function readManifest(dir: string): Manifest {
  const file = join(dir, MANIFEST);
  if (!existsSync(file))
    throw new Error(`--reuse ${dir}: no ${MANIFEST} there (not a folder --keep printed)`);
  return JSON.parse(readFileSync(file, "utf8")) as Manifest;
}

async function reuse(dir: string, workDir: string, log: Log): Promise<PreparedStore> {
  const { summary, store } = readManifest(dir);
  if (store.kind === "sqlite") {
    const dataDir = join(workDir, "data");
    mkdirSync(dataDir, { recursive: true });
    log(`copying the kept SQLite store from ${dir}…`);
    copyFileSync(join(dir, store.file), join(dataDir, "gateway.sqlite"));
    return { target: { kind: "sqlite", dataDir }, summary, seeded: false, keptAt: dir };
  }
  log(`copying the kept PostgreSQL database ${store.database}…`);
  const name = await createDatabase(store.database);
  const target: StoreTarget = { kind: "postgres", url: databaseUrl(name) };
  return { target, summary, seeded: false, keptAt: dir, keptDatabase: store.database };
}

async function seedFresh(options: ConsoleBenchOptions, workDir: string, log: Log): Promise<PreparedStore> {
  const seedOptions = { records: options.records, accounts: options.accounts, seed: options.seed };
  if (options.store === "sqlite") {
    const dataDir = join(workDir, "data");
    const summary = await seedStore({ kind: "sqlite", dataDir }, seedOptions, log);
    let keptAt: string | undefined;
    if (options.keep) {
      keptAt = mkdtempSync(join(tmpdir(), "gateway-console-seed-"));
      // The file was checkpointed and closed: it is the whole store.
      copyFileSync(join(dataDir, "gateway.sqlite"), join(keptAt, "gateway.sqlite"));
      writeManifest(keptAt, { summary, store: { kind: "sqlite", file: "gateway.sqlite" } });
    }
    return { target: { kind: "sqlite", dataDir }, summary, seeded: true, keptAt };
  }
  const seedDb = await createDatabase();
  const summary = await seedStore({ kind: "postgres", url: databaseUrl(seedDb) }, seedOptions, log);
  if (!options.keep) {
    const target: StoreTarget = { kind: "postgres", url: databaseUrl(seedDb) };
    return { target, summary, seeded: true, keptAt: undefined };
  }
  const keptAt = mkdtempSync(join(tmpdir(), "gateway-console-seed-"));
  writeManifest(keptAt, { summary, store: { kind: "postgres", database: seedDb } });
  temporary.delete(seedDb);
  // The measured run changes its store: it works on a copy, the seed stays as it was.
  const runDb = await createDatabase(seedDb);
  const target: StoreTarget = { kind: "postgres", url: databaseUrl(runDb) };
  return { target, summary, seeded: true, keptAt, keptDatabase: seedDb };
}

/** The store to measure, in or beside workDir (a temp folder the caller removes). */
export function prepareStore(
  options: ConsoleBenchOptions,
  workDir: string,
  log: Log,
): Promise<PreparedStore> {
  return options.reuse ? reuse(options.reuse, workDir, log) : seedFresh(options, workDir, log);
}

/** Where a target lives, for the report (no credentials). */
export function describeTarget(target: StoreTarget): string {
  if (target.kind === "sqlite") return join(target.dataDir, "gateway.sqlite");
  const url = new URL(target.url);
  return `postgres://${url.host}${url.pathname}`;
}
