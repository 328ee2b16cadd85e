import { type Kysely, PostgresAdapter, sql } from "kysely";

// The record writer's batch on PostgreSQL as one statement (issue #32). A batch was a
// transaction of eight to ten round trips (begin, the records, the holds' end, a counter update
// per key and account, their spending, the sessions, the daily upserts, commit); each cost the
// server a parse, a plan and a message cycle, and at 500 calls a second, with batches of one
// or two calls, those round trips were most of PostgreSQL's CPU per call. gateway_commit_calls
// does the same work, in the same order and under the same row locks (keys, then accounts,
// each in id order; then sessions; then the daily rows in their sorted order), inside one call
// whose statements are planned once per connection. The writer still computes every sum
// (src/records/writer.ts); this only applies them.
//
// p_ledger names what ends the batch's holds: 'postgres' (gateway_ledger_close, which also adds
// the tokens to the counters), 'redis' (each hold's journal row is marked with its charge, and
// kept so until the hold closes in Redis; the rows of p_done, closed there since, go), or
// 'none'. SQLite keeps the writer's own transaction: its statements cost no round trip.
//
// With Redis, a charge was a row of its own (ledger_charges): the journal row deleted and a
// charge row inserted at the commit, that row deleted at the next. Marking the journal row
// instead is one update where there were an insert and two deletes a call, on one table and
// one index: the charged columns are in no index, so the update stays on the row's page. The
// rows are found by (instance_id, hold), an index of their own (the instance's index alone
// scanned every hold of the instance, and the dead rows its deletes left, for each delete).
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`alter table ledger_reservations add column charged_tokens bigint, add column charged_nanos bigint`.execute(
    db,
  );
  await sql`create unique index ledger_reservations_hold on ledger_reservations (instance_id, hold)`.execute(
    db,
  );
  await sql`drop index ledger_reservations_instance`.execute(db);
  // charges an instance of the previous version left (it stopped between a commit and a close)
  await sql`insert into ledger_reservations (instance_id, hold, account_id, key_id, tokens, session_id, created_at,
      charged_tokens, charged_nanos)
    select instance_id, hold, account_id, key_id, 0, session_id, created_at, tokens, nanos from ledger_charges
    on conflict (instance_id, hold) do update
      set charged_tokens = excluded.charged_tokens, charged_nanos = excluded.charged_nanos`.execute(db);
  await sql`drop table ledger_charges`.execute(db);
  await sql`
    create or replace function gateway_commit_calls(
      p_records jsonb,
      p_key_ids text[], p_key_tokens bigint[], p_account_ids text[], p_account_tokens bigint[],
      p_spend_key_ids text[], p_spend_key_nanos bigint[],
      p_spend_account_ids text[], p_spend_account_nanos bigint[], p_month text,
      p_sessions jsonb, p_daily jsonb,
      p_ledger text, p_instance text, p_holds jsonb, p_done bigint[], p_now bigint)
    returns void language plpgsql as $$
    declare
      i int;
    begin
      insert into call_records (request_id, created_at, api, account_id, key_id, public_model, upstream_model,
          provider, params, stream, status, http_status, error_code, prompt_tokens, completion_tokens, total_tokens,
          uncharged_tokens, cached_tokens, cache_write_tokens, reasoning_tokens, reserved_tokens, overrun_tokens,
          usage_source, latency_ms, ttft_ms, safety_mode, safety_verdict, safety_categories, safety_ms, attempts,
          cost_nanos, uncharged_cost_nanos, cost_source, session_id, session_client)
        select request_id, created_at, api, account_id, key_id, public_model, upstream_model,
          provider, params, stream, status, http_status, error_code, prompt_tokens, completion_tokens, total_tokens,
          uncharged_tokens, cached_tokens, cache_write_tokens, reasoning_tokens, reserved_tokens, overrun_tokens,
          usage_source, latency_ms, ttft_ms, safety_mode, safety_verdict, safety_categories, safety_ms, attempts,
          cost_nanos, uncharged_cost_nanos, cost_source, session_id, session_client
        from jsonb_populate_recordset(null::call_records, p_records);

      if p_ledger = 'postgres' then
        perform gateway_ledger_close(
          array(select (h->>'hold')::bigint from jsonb_array_elements(p_holds) h),
          p_key_ids, p_key_tokens, p_account_ids, p_account_tokens);
      else
        if p_ledger = 'redis' then
          delete from ledger_reservations where instance_id = p_instance and hold = any(p_done);
          -- a row the sweep took meanwhile (this instance seemed dead) is made again, charged:
          -- were this instance to die before the close, the next sweep applies the charge
          insert into ledger_reservations (instance_id, hold, account_id, key_id, tokens, session_id, created_at,
              charged_tokens, charged_nanos)
            select p_instance, c.hold, c.account_id, c.key_id, 0, c.session_id, p_now, c.tokens, c.nanos
              from jsonb_to_recordset(p_holds)
                as c(hold bigint, account_id text, key_id text, tokens bigint, nanos bigint, session_id text)
            on conflict (instance_id, hold) do update
              set charged_tokens = excluded.charged_tokens, charged_nanos = excluded.charged_nanos;
        end if;
        for i in 1 .. coalesce(array_length(p_key_ids, 1), 0) loop
          update api_keys set used_tokens = used_tokens + p_key_tokens[i] where id = p_key_ids[i];
        end loop;
        for i in 1 .. coalesce(array_length(p_account_ids, 1), 0) loop
          update accounts set used_tokens = used_tokens + p_account_tokens[i] where id = p_account_ids[i];
        end loop;
      end if;

      -- the month figure restarts with the first charge of a new month (of the writer's clock)
      for i in 1 .. coalesce(array_length(p_spend_key_ids, 1), 0) loop
        update api_keys set spent_nanos = spent_nanos + p_spend_key_nanos[i],
            month_spent_nanos = case when spent_month = p_month
              then month_spent_nanos + p_spend_key_nanos[i] else p_spend_key_nanos[i] end,
            spent_month = p_month
          where id = p_spend_key_ids[i];
      end loop;
      for i in 1 .. coalesce(array_length(p_spend_account_ids, 1), 0) loop
        update accounts set spent_nanos = spent_nanos + p_spend_account_nanos[i],
            month_spent_nanos = case when spent_month = p_month
              then month_spent_nanos + p_spend_account_nanos[i] else p_spend_account_nanos[i] end,
            spent_month = p_month
          where id = p_spend_account_ids[i];
      end loop;

      if jsonb_array_length(p_sessions) > 0 then
        insert into session_usage (key_id, session_id, account_id, used_tokens, spent_nanos, created_at)
          select s.key_id, s.session_id, s.account_id, s.used_tokens, s.spent_nanos, p_now
            from jsonb_to_recordset(p_sessions)
              as s(key_id text, session_id text, account_id text, used_tokens bigint, spent_nanos bigint)
          on conflict (key_id, session_id) do update
            set used_tokens = session_usage.used_tokens + excluded.used_tokens,
                spent_nanos = session_usage.spent_nanos + excluded.spent_nanos;
      end if;

      if jsonb_array_length(p_daily) > 0 then
        insert into daily_usage (account_id, day, key_id, model, prompt_tokens, completion_tokens, total_tokens,
            calls, cost_nanos)
          select account_id, day, key_id, model, prompt_tokens, completion_tokens, total_tokens, calls, cost_nanos
            from jsonb_populate_recordset(null::daily_usage, p_daily)
          on conflict (account_id, day, key_id, model) do update
            set prompt_tokens = daily_usage.prompt_tokens + excluded.prompt_tokens,
                completion_tokens = daily_usage.completion_tokens + excluded.completion_tokens,
                total_tokens = daily_usage.total_tokens + excluded.total_tokens,
                calls = daily_usage.calls + excluded.calls,
                cost_nanos = daily_usage.cost_nanos + excluded.cost_nanos;
      end if;
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`drop function gateway_commit_calls(jsonb, text[], bigint[], text[], bigint[], text[], bigint[],
    text[], bigint[], text, jsonb, jsonb, text, text, jsonb, bigint[], bigint)`.execute(db);
  await sql`
    create table ledger_charges (
      instance_id text not null,
      hold bigint not null,
      account_id text not null,
      key_id text not null,
      tokens bigint not null,
      nanos bigint not null,
      session_id text,
      created_at bigint not null,
      primary key (instance_id, hold)
    )`.execute(db);
  await sql`insert into ledger_charges select instance_id, hold, account_id, key_id, charged_tokens, charged_nanos,
      session_id, created_at from ledger_reservations where charged_tokens is not null`.execute(db);
  await sql`delete from ledger_reservations where charged_tokens is not null`.execute(db);
  await sql`create index ledger_reservations_instance on ledger_reservations (instance_id)`.execute(db);
  await sql`drop index ledger_reservations_hold`.execute(db);
  await sql`alter table ledger_reservations drop column charged_tokens, drop column charged_nanos`.execute(
    db,
  );
}
