// Flags of `npm run bench:console` (bench/console.ts).
import { parseArgs } from "node:util";

export interface ConsoleBenchOptions {
  records: number;
  accounts: number;
  store: "sqlite" | "postgres";
  /** requests per JSON call and concurrency level; exports get a tenth of it */
  requests: number;
  /** concurrency levels each call is measured at */
  concurrency: number[];
  /** keep the seeded store (before retention) for --reuse */
  keep: boolean;
  /** a folder a --keep run printed */
  reuse: string | undefined;
  /** PRNG seed of the data's shape */
  seed: number;
  /** seed (and check) the store, measure nothing */
  seedOnly: boolean;
  logLevel: string;
  help: boolean;
}

export const USAGE = `usage: npm run bench:console -- [options]

  --records N        call records to seed                   (default 1000000)
  --accounts N       accounts to spread them over           (default 100)
  --store S          sqlite (a temp folder) or postgres     (default sqlite; postgres creates and drops
                     its own database on TEST_PG_ADMIN_URL or postgres://postgres@127.0.0.1:5432/postgres)
  --requests N       requests per call and concurrency      (default 200; exports: a tenth, at least 10)
  --concurrency L    concurrency levels                     (default 1,8)
  --keep             keep the seeded store (as it was before retention) and print where it is
  --reuse DIR        measure a store kept by --keep instead of seeding (each run works on a copy)
  --seed N           PRNG seed of the data's shape          (default 1)
  --seed-only        seed and check the store, measure nothing
  --log-level L      the gateway's LOG_LEVEL                (default warn)`;

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw.replaceAll("_", ""));
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return n;
}

export function parseOptions(argv: string[]): ConsoleBenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      records: { type: "string" },
      accounts: { type: "string" },
      store: { type: "string" },
      requests: { type: "string" },
      concurrency: { type: "string" },
      keep: { type: "boolean" },
      reuse: { type: "string" },
      seed: { type: "string" },
      "seed-only": { type: "boolean" },
      "log-level": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  const store = values.store ?? "sqlite";
  if (store !== "sqlite" && store !== "postgres") throw new Error("--store must be sqlite or postgres");
  const concurrency = (values.concurrency ?? "1,8")
    .split(",")
    .map((c) => int("--concurrency", c.trim(), 1, 1, 64));
  if (values.reuse && values.keep) throw new Error("--reuse already measures a kept store; drop --keep");
  return {
    records: int("--records", values.records, 1_000_000, 1_000, 50_000_000),
    accounts: int("--accounts", values.accounts, 100, 2, 10_000),
    store,
    requests: int("--requests", values.requests, 200, 1, 100_000),
    concurrency,
    keep: values.keep ?? false,
    reuse: values.reuse,
    seed: int("--seed", values.seed, 1, 0, 2 ** 32 - 1),
    seedOnly: values["seed-only"] ?? false,
    logLevel: values["log-level"] ?? "warn",
    help: values.help ?? false,
  };
}
