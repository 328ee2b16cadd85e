import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "./src/auth/key-format.ts";
import { migrate, openStore } from "./src/store/db.ts";
import { callRecord } from "./test/support/call-record.ts";

const mode = process.argv[2] ?? "random";
const store = openStore({ data_dir: mkdtempSync(join(tmpdir(), "exp-")) });
await migrate(store);
let seq = 0;
const id = () => {
  if (mode === "random") return newId("req");
  // time-ordered: ms timestamp base36 + counter + random tail
  return `req_${Date.now().toString(36)}${(seq++ % 1296).toString(36).padStart(2, "0")}${newId("req").slice(4, 10)}`;
};
const params = JSON.stringify({ messages: 2, max_tokens: 1024, temperature: 0.7, stream: false });
const attempts = JSON.stringify([{ deployment: "openai/gpt", outcome: "ok", ms: 21 }]);
const N = Number(process.argv[3] ?? 60000), B = 38;
const t0 = process.cpuUsage();
const w0 = performance.now();
for (let i = 0; i < N; i += B) {
  const rows = Array.from({ length: B }, () =>
    callRecord({ request_id: id(), prompt_tokens: 20, completion_tokens: 20, params, attempts, account_id: null, key_id: null }),
  );
  await store.db.transaction().execute(async (trx) => {
    await trx.insertInto("call_records").values(rows).execute();
  });
}
const cpu = process.cpuUsage(t0);
console.log(mode, "µs CPU per record:", ((cpu.user + cpu.system) / N).toFixed(1), "wall µs:", ((performance.now() - w0) * 1000 / N).toFixed(1));
await store.close();
