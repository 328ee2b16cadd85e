// The store a console benchmark run measures: seeded fresh, or copied from one a --keep run
// left behind. The measured run changes its store (retention deletes rows, logins add
// sessions), so a kept store is saved as it was right after seeding and every run works on
// its own copy: a file copy for SQLite, CREATE DATABASE … TEMPLATE for PostgreSQL.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConsoleBenchOptions } from "./console-options.ts";
import { type Log, type SeedSummary, type StoreTarget, seedStore } from "./console-seed.ts";
import { createDatabase, databaseUrl, keepDatabase } from "./databases.ts";

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
  keepDatabase(seedDb);
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
