// Stored responses: each account's Responses API answers, kept for `retention.responses_days`
// unless the request said `store: false`. GET /v1/responses/{id} reads one, DELETE removes it,
// and previous_response_id continues its conversation on any upstream: the chain of previous
// ids, read in one recursive query, gives each turn's input and output items in order. Every
// read is scoped to the account: another account's id is as unknown as a made-up one.
import { type Kysely, sql } from "kysely";
import { GatewayError } from "../../errors/index.ts";
import type { Database } from "../../store/schema.ts";
import type { InputItem } from "./request.ts";

type Db = Kysely<Database>;

const DAY_MS = 86_400_000;
/** the longest conversation continued: a chain is read in one query, bounded so it cannot run away */
export const MAX_CHAIN = 10_000;
/** rows per delete when pruning, as for call records (src/records/retention.ts) */
const CHUNK = 500;

export interface StoredResponse {
  id: string;
  previousResponseId: string | null;
  /** this request's input items */
  input: InputItem[];
  /** the Response object, as JSON */
  response: string;
}

export class ResponseStore {
  readonly #db: Db;
  readonly #days: () => number;

  /** `days`: how long a response is kept (read at each call, so a reload applies at once) */
  constructor(db: Db, days: () => number) {
    this.#db = db;
    this.#days = days;
  }

  #oldest(now: number): number {
    return now - this.#days() * DAY_MS;
  }

  async save(accountId: string, row: StoredResponse, now = Date.now()): Promise<void> {
    await this.#db
      .insertInto("stored_responses")
      .values({
        id: row.id,
        account_id: accountId,
        created_at: now,
        previous_response_id: row.previousResponseId,
        input: JSON.stringify(row.input),
        response: row.response,
      })
      .execute();
  }

  /** The Response object's JSON, or undefined when the account has no such response (or it expired). */
  async get(accountId: string, id: string, now = Date.now()): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom("stored_responses")
      .select("response")
      .where("id", "=", id)
      .where("account_id", "=", accountId)
      .where("created_at", ">=", this.#oldest(now))
      .executeTakeFirst();
    return row?.response;
  }

  /**
   * The account's stored item of id `itemId` (an `item_reference` names one), or undefined. The
   * gateway's item ids carry their response's (./response.ts: `msg_<suffix><n>` is of
   * `resp_<suffix>`), so the lookup is by primary key: the response's input and output are read.
   */
  async item(accountId: string, itemId: string, now = Date.now()): Promise<InputItem | undefined> {
    const under = itemId.indexOf("_");
    if (under < 1 || itemId.length > 160) return undefined;
    const rest = itemId.slice(under + 1);
    // the item's number is two base-36 digits, or more in a response of over 1,296 items
    for (let digits = 2; digits <= 4 && digits < rest.length; digits++) {
      const row = await this.#db
        .selectFrom("stored_responses")
        .select(["input", "response"])
        .where("id", "=", `resp_${rest.slice(0, -digits)}`)
        .where("account_id", "=", accountId)
        .where("created_at", ">=", this.#oldest(now))
        .executeTakeFirst();
      if (!row) continue;
      const items = [
        ...(JSON.parse(row.input) as InputItem[]),
        ...(JSON.parse(row.response) as { output: InputItem[] }).output,
      ];
      const found = items.find((i) => (i as { id?: unknown }).id === itemId);
      if (found) return found;
    }
    return undefined;
  }

  /** True when the account's response was there and is now deleted. */
  async delete(accountId: string, id: string): Promise<boolean> {
    const r = await this.#db
      .deleteFrom("stored_responses")
      .where("id", "=", id)
      .where("account_id", "=", accountId)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /**
   * The conversation `id` ends: every turn's input items then its output items, oldest
   * first. Throws previous_response_not_found when the account has no such
   * response, or when an earlier turn of it is no longer stored (deleted or expired): a
   * conversation continued without its beginning would answer a different question.
   */
  async conversation(accountId: string, id: string, now = Date.now()): Promise<InputItem[]> {
    const oldest = this.#oldest(now);
    const { rows } = await sql<{ input: string; response: string; previous_response_id: string | null }>`
      with recursive chain (id, previous_response_id, input, response, depth) as (
        select id, previous_response_id, input, response, 0
          from stored_responses
          where id = ${id} and account_id = ${accountId} and created_at >= ${oldest}
        union all
        select s.id, s.previous_response_id, s.input, s.response, chain.depth + 1
          from stored_responses s join chain on s.id = chain.previous_response_id
          where s.account_id = ${accountId} and s.created_at >= ${oldest} and chain.depth < ${MAX_CHAIN}
      )
      select input, response, previous_response_id from chain order by depth desc`.execute(this.#db);
    if (!rows.length)
      throw new GatewayError("previous_response_not_found", {
        message: `Previous response with id '${id.slice(0, 128)}' not found.`,
        param: "previous_response_id",
      });
    if (rows[0]!.previous_response_id !== null)
      throw new GatewayError("previous_response_not_found", {
        message: `The conversation of '${id.slice(0, 128)}' can no longer be continued: its earlier response '${rows[0]!.previous_response_id.slice(0, 128)}' was deleted or has expired.`,
        param: "previous_response_id",
      });
    const items: InputItem[] = [];
    for (const row of rows) {
      items.push(...(JSON.parse(row.input) as InputItem[]));
      items.push(...(JSON.parse(row.response) as { output: InputItem[] }).output);
    }
    return items;
  }
}

/** Deletes the stored responses older than `days`, CHUNK rows a statement; returns how many. */
export async function pruneStoredResponses(
  db: Db,
  days: number,
  now = Date.now(),
  stopped: () => boolean = () => false,
): Promise<number> {
  const cutoff = now - days * DAY_MS;
  let total = 0;
  for (;;) {
    const r = await db
      .deleteFrom("stored_responses")
      .where(
        "id",
        "in",
        db.selectFrom("stored_responses").select("id").where("created_at", "<", cutoff).limit(CHUNK),
      )
      .executeTakeFirst();
    const n = Number(r.numDeletedRows);
    total += n;
    if (n < CHUNK || stopped()) return total;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
