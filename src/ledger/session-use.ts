// What a capped agent session used before a ledger first holds for it: the sum of its records
// (the key's records naming the session), read through the records' session index. The
// in-process ledger starts a session's book from it; PostgreSQL's gateway_session_row does
// the same in SQL.
import type { Kysely } from "kysely";
import { GatewayError } from "../errors/index.ts";
import type { Database } from "../store/schema.ts";
import type { SessionUse } from "./memory-ledger.ts";

export function recordedSessionUse(db: Kysely<Database>): SessionUse {
  return async (accountId, keyId, sessionId) => {
    try {
      const row = await db
        .selectFrom("call_records")
        .select((eb) => [
          eb.fn.sum<number | string | null>("total_tokens").as("tokens"),
          eb.fn.sum<number | string | null>("cost_nanos").as("nanos"),
        ])
        .where("account_id", "=", accountId)
        .where("session_id", "=", sessionId)
        // the partial index's own condition, stated so every planner takes it
        .where("session_id", "is not", null)
        .where("key_id", "=", keyId)
        .executeTakeFirst();
      return { tokens: Number(row?.tokens ?? 0), nanos: Number(row?.nanos ?? 0) };
    } catch (err) {
      throw new GatewayError("store_unavailable", { cause: err });
    }
  };
}
