// Stored responses: each account's Responses API answers, kept for `retention.responses_days`
// unless the request said `store: false`. GET /v1/responses/{id} reads one, DELETE removes it,
// and previous_response_id continues its conversation on any upstream: the chain of previous
// ids, read in one recursive query, gives each turn's input and output items in order. Every
// read is scoped to its owner: the key that made the response (`responses.visibility: key`,
// the default) or its account; another owner's id is as unknown as a made-up one. What is kept
// is bounded per response, per account and per continuation (second audit: 900 KB of junk in
// an item was kept 30 days for 300 tokens charged, and 20 continuations re-read 22.5 MB each).
import { type ExpressionBuilder, type Kysely, sql } from "kysely";
import { GatewayError } from "../../errors/index.ts";
import type { Database } from "../../store/schema.ts";
import type { InputItem } from "./request.ts";

type Db = Kysely<Database>;

/** Who asks: a stored response is its key's, or its account's (`responses.visibility`). */
export interface Owner {
  accountId: string;
  keyId: string;
}

export interface StoreLimits {
  visibility: "key" | "account";
  max_stored_bytes: number;
  max_account_bytes: number;
  max_continued_bytes: number;
}

const utf8 = (text: string) => Buffer.byteLength(text, "utf8");

const DAY_MS = 86_400_000;
/** the longest conversation continued: a chain is read in one query, bounded so it cannot run away */
export const MAX_CHAIN = 10_000;
/** rows per delete when pruning, as for call records (src/retention/retention.ts) */
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
  readonly #limits: () => StoreLimits;

  /**
   * `days`: how long a response is kept; `limits`: who sees one and what is kept (both read
   * at each call, so a reload applies at once)
   */
  constructor(db: Db, days: () => number, limits: () => StoreLimits) {
    this.#db = db;
    this.#days = days;
    this.#limits = limits;
  }

  /** The rows `owner` may see: its account's, and of those its key's when responses are the key's. */
  #visible(owner: Owner) {
    const byKey = this.#limits().visibility === "key";
    return (eb: ExpressionBuilder<Database, "stored_responses">) =>
      byKey
        ? eb.and([
            eb("account_id", "=", owner.accountId),
            // rows kept before keys were recorded stay the account's
            eb.or([eb("key_id", "=", owner.keyId), eb("key_id", "is", null)]),
          ])
        : eb("account_id", "=", owner.accountId);
  }

  /**
   * Refuses, before a call runs, a response that could not be kept: its input alone over the
   * per-response bound (413), or the account's responses already at theirs (429).
   */
  async admit(owner: Owner, input: unknown, now = Date.now()): Promise<void> {
    const limits = this.#limits();
    const bytes = utf8(JSON.stringify(input) ?? "");
    if (bytes > limits.max_stored_bytes)
      throw new GatewayError("stored_response_too_large", {
        message: `This request's input (${bytes} bytes) is over what one stored response may hold (responses.max_stored_bytes, ${limits.max_stored_bytes} bytes): send store: false, or a shorter input.`,
        param: "store",
      });
    const row = await this.#db
      .selectFrom("stored_responses")
      .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("bytes"), eb.lit(0)).as("total"))
      .where("account_id", "=", owner.accountId)
      .where("created_at", ">=", this.#oldest(now))
      .executeTakeFirst();
    if (Number(row?.total ?? 0) + bytes > limits.max_account_bytes)
      throw new GatewayError("stored_responses_full", {
        message: `The account's stored responses hold ${Number(row?.total ?? 0)} bytes, and may hold ${limits.max_account_bytes} (responses.max_account_bytes): delete some, or send store: false.`,
        param: "store",
      });
  }

  #oldest(now: number): number {
    return now - this.#days() * DAY_MS;
  }

  /**
   * Keeps a response for its owner; false (nothing kept) when it is over the per-response
   * bound, which only its output can make it now: the call has run, and its answer stands.
   */
  async save(owner: Owner, row: StoredResponse, now = Date.now()): Promise<boolean> {
    const input = JSON.stringify(row.input);
    const bytes = utf8(input) + utf8(row.response);
    if (bytes > this.#limits().max_stored_bytes) return false;
    await this.#db
      .insertInto("stored_responses")
      .values({
        id: row.id,
        account_id: owner.accountId,
        key_id: owner.keyId,
        created_at: now,
        previous_response_id: row.previousResponseId,
        input,
        response: row.response,
        bytes,
      })
      .execute();
    return true;
  }

  /** The Response object's JSON, or undefined when the account has no such response (or it expired). */
  async get(owner: Owner, id: string, now = Date.now()): Promise<string | undefined> {
    const row = await this.#db
      .selectFrom("stored_responses")
      .select("response")
      .where("id", "=", id)
      .where(this.#visible(owner))
      .where("created_at", ">=", this.#oldest(now))
      .executeTakeFirst();
    return row?.response;
  }

  /**
   * The account's stored item of id `itemId` (an `item_reference` names one), or undefined. The
   * gateway's item ids carry their response's (./response.ts: `msg_<suffix><n>` is of
   * `resp_<suffix>`), so the lookup is by primary key: the response's input and output are read.
   */
  async item(owner: Owner, itemId: string, now = Date.now()): Promise<InputItem | undefined> {
    const under = itemId.indexOf("_");
    if (under < 1 || itemId.length > 160) return undefined;
    const rest = itemId.slice(under + 1);
    // the item's number is two base-36 digits, or more in a response of over 1,296 items
    for (let digits = 2; digits <= 4 && digits < rest.length; digits++) {
      const row = await this.#db
        .selectFrom("stored_responses")
        .select(["input", "response"])
        .where("id", "=", `resp_${rest.slice(0, -digits)}`)
        .where(this.#visible(owner))
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
  async delete(owner: Owner, id: string): Promise<boolean> {
    const r = await this.#db
      .deleteFrom("stored_responses")
      .where("id", "=", id)
      .where(this.#visible(owner))
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /**
   * The conversation `id` ends: every turn's input items then its output items, oldest
   * first. Throws previous_response_not_found when the account has no such
   * response, or when an earlier turn of it is no longer stored (deleted or expired): a
   * conversation continued without its beginning would answer a different question.
   */
  async conversation(owner: Owner, id: string, now = Date.now()): Promise<InputItem[]> {
    const oldest = this.#oldest(now);
    const limits = this.#limits();
    const keyed = limits.visibility === "key";
    const mine = (alias: string) =>
      keyed
        ? sql`${sql.ref(`${alias}.account_id`)} = ${owner.accountId} and (${sql.ref(`${alias}.key_id`)} = ${owner.keyId} or ${sql.ref(`${alias}.key_id`)} is null)`
        : sql`${sql.ref(`${alias}.account_id`)} = ${owner.accountId}`;
    const chain = (columns: ReturnType<typeof sql.raw>) => sql`
      with recursive chain (id, previous_response_id, depth) as (
        select s.id, s.previous_response_id, 0
          from stored_responses s
          where s.id = ${id} and ${mine("s")} and s.created_at >= ${oldest}
        union all
        select s.id, s.previous_response_id, chain.depth + 1
          from stored_responses s join chain on s.id = chain.previous_response_id
          where ${mine("s")} and s.created_at >= ${oldest} and chain.depth < ${MAX_CHAIN}
      )
      select ${columns} from chain join stored_responses r on r.id = chain.id order by chain.depth desc`;
    // What the conversation holds is summed before its texts are read: a continuation may
    // expand to `max_continued_bytes`, and one over it reads nothing more.
    const { rows: sizes } = await chain(sql.raw("r.bytes, chain.previous_response_id")).execute(this.#db);
    const total = (sizes as { bytes: number | string }[]).reduce((n, r) => n + Number(r.bytes), 0);
    if (total > limits.max_continued_bytes)
      throw new GatewayError("stored_response_too_large", {
        message: `The conversation of '${id.slice(0, 128)}' holds ${total} bytes, over what one continuation may expand to (responses.max_continued_bytes, ${limits.max_continued_bytes} bytes): start a new conversation.`,
        param: "previous_response_id",
      });
    const { rows } = (await chain(sql.raw("r.input, r.response, chain.previous_response_id")).execute(
      this.#db,
    )) as { rows: { input: string; response: string; previous_response_id: string | null }[] };
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
