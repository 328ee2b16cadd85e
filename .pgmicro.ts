import { readFileSync } from "node:fs";
import { sql } from "kysely";
import { createTestDatabase } from "./test/support/postgres.ts";
import { callRecord } from "./test/support/call-record.ts";
import { migrate, openStore } from "./src/store/db.ts";
import { createAccount } from "./src/accounts/accounts.ts";
import { createKey } from "./src/accounts/keys.ts";
import { RecordWriter } from "./src/records/writer.ts";

const database = await createTestDatabase();
const store = openStore({ data_dir: "unused", database_url: database.url });
await migrate(store);
const acc = await createAccount(store.db, { name: "m", plan_id: "default" });
const key = (await createKey(store.db, { account_id: acc.id })).key;
const pg = await import("pg");
const client = new pg.default.Client({ connectionString: database.url });
await client.connect();
const pid = (await client.query("select pg_backend_pid() as p")).rows[0].p;
const cpu = () => { const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" "); return (Number(f[11]) + Number(f[12])) * 10_000; }; // µs
async function measure(name: string, n: number, run: (i: number) => Promise<unknown>) {
  for (let i = 0; i < 50; i++) await run(-1 - i);
  const t0 = cpu();
  for (let i = 0; i < n; i++) await run(i);
  const t1 = cpu();
  console.log(name.padEnd(40), ((t1 - t0) / n).toFixed(1), "µs backend CPU per op");
}
await measure("select 1", 2000, () => client.query("select 1"));
await client.query("set synchronous_commit = off");
const COMMIT = `select gateway_commit_calls($1::jsonb, $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::bigint[], $10, $11::jsonb, $12::jsonb, $13, $14, $15::jsonb, $16::bigint[], $17)`;
const batch = (n: number) => { const recs = Array.from({ length: n }, () => callRecord({ account_id: acc.id, key_id: key.id, prompt_tokens: 10, completion_tokens: 20, public_model: "demo", upstream_model: "demo", provider: "demo" }));
  return [JSON.stringify(recs), [key.id], [30 * n], [acc.id], [30 * n], [], [], [], [], "2026-11", "[]", JSON.stringify([{ account_id: acc.id, day: "2026-11-26", key_id: key.id, model: "demo", prompt_tokens: 10*n, completion_tokens: 20*n, total_tokens: 30*n, calls: n, cost_nanos: 0 }]), "none", null, "[]", [], Date.now()]; };
let h = 0;
await measure("reservation insert (async commit)", 2000, () => client.query(
  "insert into ledger_reservations (instance_id, hold, account_id, key_id, tokens, account_nanos, key_nanos, session_id, session_nanos, created_at) values ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)",
  ["i", ++h, acc.id, key.id, 100, 0, 0, null, 0, Date.now()]));
await measure("reservation delete (async commit)", 2000, (i) => client.query("delete from ledger_reservations where instance_id = $1 and hold = $2", ["i", i < 0 ? h - 60 - i : i + 1]));
const ins = (name?: string) => () => client.query({ ...(name ? { name } : {}), text: "insert into ledger_reservations (instance_id, hold, account_id, key_id, tokens, account_nanos, key_nanos, session_id, session_nanos, created_at) values ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)", values: ["j", ++h, acc.id, key.id, 100, 0, 0, null, 0, Date.now()] });
await measure("reservation insert unnamed", 2000, ins());
await measure("reservation insert prepared", 2000, ins("gw_ins"));
const unn = (name?: string) => () => client.query({ ...(name ? { name } : {}), text: "insert into ledger_reservations (instance_id, hold, account_id, key_id, tokens, account_nanos, key_nanos, session_id, session_nanos, created_at) select * from unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::text[], $9::bigint[], $10::bigint[])", values: [["k"], [++h], [acc.id], [key.id], [100], [0], [0], [null], [0], [Date.now()]] });
await measure("reservation insert unnest unnamed", 2000, unn());
await measure("reservation insert unnest prepared", 2000, unn("gw_unn"));
await client.query("set synchronous_commit = on");
await measure("commit_calls batch 1 prepared", 1000, () => client.query({ name: "gw_commit", text: COMMIT, values: batch(1) }));
await measure("commit_calls batch 1 unnamed", 1000, () => client.query(COMMIT, batch(1)));
for (const n of [1, 2, 10, 50]) await measure(`commit_calls batch of ${n} (per record)`, Math.round(1000 / n), () => client.query(COMMIT, batch(n))).then(() => {});
for (const n of [1, 10, 50]) { const t0 = cpu(); const k = Math.round(1000/n); for (let i=0;i<k;i++) await client.query(COMMIT, batch(n)); console.log(`  -> per record, batch ${n}:`, ((cpu()-t0)/(k*n)).toFixed(1)); }
await client.end(); await store.close(); await database.drop();
