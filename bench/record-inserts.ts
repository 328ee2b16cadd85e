// node bench/record-inserts.ts [records]: what inserting call records into a fresh SQLite
// store costs per record, in batches as the record writer commits them, with request ids in
// time order (as the gateway makes them) and with random ids (as it made them before). The
// primary key's index decides the difference: random keys land on a random page each.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId, newRequestId } from "../src/accounts/key-format.ts";
import { migrate, openStore } from "../src/store/db.ts";
import { callRecord } from "../test/support/call-record.ts";

const RECORDS = Number(process.argv[2] ?? 60_000);
/** about what one 20 ms commit gathers at 1,900 calls/s */
const BATCH = 38;

async function measure(label: string, id: () => string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "record-inserts-"));
  const store = openStore({ data_dir: dir });
  try {
    await migrate(store);
    const params = JSON.stringify({ max_tokens: 1024, temperature: 0.7, messages: 2 });
    const attempts = JSON.stringify([{ deployment: "openai", outcome: "ok", ms: 21 }]);
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < RECORDS; i += BATCH) {
      const rows = Array.from({ length: BATCH }, () =>
        callRecord({ request_id: id(), prompt_tokens: 20, completion_tokens: 20, params, attempts }),
      );
      await store.db.transaction().execute((trx) => trx.insertInto("call_records").values(rows).execute());
    }
    const used = process.cpuUsage(cpu);
    const perRecord = (used.user + used.system) / RECORDS;
    const wall = ((performance.now() - started) * 1000) / RECORDS;
    console.log(
      `${label.padEnd(22)} ${perRecord.toFixed(1).padStart(6)} µs CPU, ${wall.toFixed(1).padStart(6)} µs wall per record`,
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`${RECORDS} call records in batches of ${BATCH}, SQLite:`);
for (let round = 0; round < 2; round++) {
  await measure("time-ordered ids", () => newRequestId());
  await measure("random ids", () => newId("req"));
}
