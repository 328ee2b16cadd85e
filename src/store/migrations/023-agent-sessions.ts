import { type Kysely, PostgresAdapter, sql } from "kysely";
import { CLOSE_MONEY, RESERVE_MONEY } from "./015-shared-money.ts";

// Agent sessions (issue #31). Each record keeps the session its client named and how it named
// it (docs/records.md), behind a partial index, so the records of calls without a session add
// nothing to it: an account's sessions and a session's calls are read from it, and so is what
// a session used when a ledger first meets it. A key may cap each of its sessions in tokens
// and in nanodollars (for the session's whole life).
//
// PostgreSQL holds what capped sessions used and hold in session_usage, a row per key and
// session, made by the first capped hold (from the records the session already has) and
// locked in the same call as the key's and the account's rows, after them; the record writer
// charges it with the records. A hold row (and, with Redis, a charge row) names its session and
// the nanodollars it holds against the session's budget, so a close, a sweep or a new Redis
// epoch's seed gives back or counts exactly those. SQLite serves one process, whose ledger is
// in memory and reads a session's use from its records: it gets the columns only.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("call_records").addColumn("session_id", "text").execute();
  await db.schema.alterTable("call_records").addColumn("session_client", "text").execute();
  await db.schema
    .createIndex("call_records_session")
    .on("call_records")
    .columns(["account_id", "session_id", "created_at"])
    .where(sql.ref("session_id"), "is not", null)
    .execute();
  await db.schema.alterTable("api_keys").addColumn("session_limit_tokens", "bigint").execute();
  await db.schema.alterTable("api_keys").addColumn("session_budget_nanos", "bigint").execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;

  await sql`
    create table session_usage (
      key_id text not null,
      session_id text not null,
      account_id text not null,
      used_tokens bigint not null default 0,
      reserved_tokens bigint not null default 0,
      spent_nanos bigint not null default 0,
      reserved_nanos bigint not null default 0,
      created_at bigint not null,
      primary key (key_id, session_id)
    )`.execute(db);
  for (const table of ["ledger_reservations", "ledger_charges"])
    await db.schema.alterTable(table).addColumn("session_id", "text").execute();
  await db.schema
    .alterTable("ledger_reservations")
    .addColumn("session_nanos", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();

  // The session's row, made on its first capped hold from what its records say it used.
  await sql`
    create function gateway_session_row(p_account text, p_key text, p_session text) returns void
    language sql as $$
      insert into session_usage (key_id, session_id, account_id, used_tokens, spent_nanos, created_at)
        select p_key, p_session, p_account, coalesce(sum(total_tokens), 0), coalesce(sum(cost_nanos), 0),
               gateway_ledger_now()
          from call_records
          where account_id = p_account and session_id = p_session and session_id is not null and key_id = p_key
        on conflict (key_id, session_id) do nothing
    $$`.execute(db);

  // As in 015, with a third subject: p_session (null: the call names no session, or its key
  // caps none), capped by p_session_limit tokens and p_session_budget nanodollars (each null:
  // no such cap) for the session's whole life. Its row is locked after the key's and the
  // account's. Its limits come after the key's and the account's in the order that names a
  // refusal on a tie. A hold also says what it holds against the session's budget.
  await sql`drop function gateway_reserve(text, text, text, bigint, bigint, bigint, bigint, bigint, bigint, float8, bigint, text)`.execute(
    db,
  );
  await sql.raw(RESERVE_SESSIONS).execute(db);
  // As in 015, and the closed holds' tokens and money held against their sessions go back.
  await sql.raw(CLOSE_SESSIONS).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`drop function gateway_reserve(text, text, text, bigint, bigint, bigint, bigint, bigint, bigint, float8, bigint, text, text, bigint, bigint)`.execute(
      db,
    );
    await sql.raw(RESERVE_MONEY).execute(db);
    await sql.raw(CLOSE_MONEY).execute(db);
    await sql`drop function gateway_session_row(text, text, text)`.execute(db);
    await db.schema.alterTable("ledger_reservations").dropColumn("session_nanos").execute();
    for (const table of ["ledger_charges", "ledger_reservations"])
      await db.schema.alterTable(table).dropColumn("session_id").execute();
    await sql`drop table session_usage`.execute(db);
  }
  await db.schema.alterTable("api_keys").dropColumn("session_budget_nanos").execute();
  await db.schema.alterTable("api_keys").dropColumn("session_limit_tokens").execute();
  await db.schema.dropIndex("call_records_session").execute();
  await db.schema.alterTable("call_records").dropColumn("session_client").execute();
  await db.schema.alterTable("call_records").dropColumn("session_id").execute();
}

const RESERVE_SESSIONS = `
    create function gateway_reserve(
      p_instance text, p_account text, p_key text, p_plan_quota bigint,
      p_wanted bigint, p_minimum bigint, p_waiter bigint, p_wait_ms bigint,
      p_fixed bigint, p_per_token float8, p_prompt bigint, p_month text,
      p_session text, p_session_limit bigint, p_session_budget bigint)
    returns table (status text, tokens bigint, remaining bigint, reason text,
                   reservation_id bigint, waiter_id bigint, key_used bigint, account_used bigint,
                   nanos bigint, account_nanos bigint, key_nanos bigint,
                   key_spent bigint, account_spent bigint, session_nanos bigint)
    language plpgsql as $$
    declare
      k record;
      a record;
      s record;
      now_ms bigint := gateway_ledger_now();
      v_free bigint;
      v_left bigint;
      v_why text;
      v_room bigint;
      v_t bigint;
      v_got bigint;
      v_nanos bigint;
      v_an bigint := 0;
      v_kn bigint := 0;
      v_sn bigint := 0;
      v_sleft bigint;
      rid bigint;
      wid bigint := p_waiter;
    begin
      select limit_tokens, used_tokens, reserved_tokens, reserved_nanos, spent_nanos,
             gateway_budget_left(budget_nanos, budget_period, spent_nanos, month_spent_nanos, spent_month, p_month)
               as budget_left
        into k from api_keys where id = p_key for update;
      select coalesce(quota_tokens, p_plan_quota) as quota, used_tokens, reserved_tokens, reserved_nanos, spent_nanos,
             gateway_budget_left(budget_nanos, budget_period, spent_nanos, month_spent_nanos, spent_month, p_month)
               as budget_left
        into a from accounts where id = p_account for update;
      if p_session is not null then
        select used_tokens, reserved_tokens, spent_nanos, reserved_nanos into s
          from session_usage where key_id = p_key and session_id = p_session for update;
        if not found then
          perform gateway_session_row(p_account, p_key, p_session);
          select used_tokens, reserved_tokens, spent_nanos, reserved_nanos into s
            from session_usage where key_id = p_key and session_id = p_session for update;
        end if;
      end if;
      v_free := a.quota - a.used_tokens;
      v_left := v_free;
      v_why := 'quota';
      v_room := v_free - a.reserved_tokens;
      if k.limit_tokens is not null then
        v_t := k.limit_tokens - k.used_tokens;
        if v_t < v_free then v_free := v_t; v_left := v_t; v_why := 'key_limit'; end if;
        v_room := least(v_room, v_t - k.reserved_tokens);
      end if;
      if p_fixed is not null and a.budget_left is not null then
        v_t := gateway_tokens_for(p_fixed, p_per_token, p_prompt, a.budget_left);
        if v_t < v_free then v_free := v_t; v_left := a.budget_left; v_why := 'account_budget'; end if;
        v_room := least(v_room, gateway_tokens_for(p_fixed, p_per_token, p_prompt, a.budget_left - a.reserved_nanos));
      end if;
      if p_fixed is not null and k.budget_left is not null then
        v_t := gateway_tokens_for(p_fixed, p_per_token, p_prompt, k.budget_left);
        if v_t < v_free then v_free := v_t; v_left := k.budget_left; v_why := 'key_budget'; end if;
        v_room := least(v_room, gateway_tokens_for(p_fixed, p_per_token, p_prompt, k.budget_left - k.reserved_nanos));
      end if;
      if p_session is not null and p_session_limit is not null then
        v_t := p_session_limit - s.used_tokens;
        if v_t < v_free then v_free := v_t; v_left := v_t; v_why := 'session_limit'; end if;
        v_room := least(v_room, v_t - s.reserved_tokens);
      end if;
      if p_fixed is not null and p_session is not null and p_session_budget is not null then
        v_sleft := p_session_budget - s.spent_nanos;
        v_t := gateway_tokens_for(p_fixed, p_per_token, p_prompt, v_sleft);
        if v_t < v_free then v_free := v_t; v_left := v_sleft; v_why := 'session_budget'; end if;
        v_room := least(v_room, gateway_tokens_for(p_fixed, p_per_token, p_prompt, v_sleft - s.reserved_nanos));
      end if;
      if v_free < p_minimum then
        if wid is not null then
          delete from ledger_waiters where id = wid;
          perform gateway_ledger_notify(p_account, p_key);
        end if;
        return query select 'refused', 0::bigint, v_left, v_why, null::bigint, null::bigint,
          k.used_tokens, a.used_tokens, null::bigint, 0::bigint, 0::bigint, k.spent_nanos, a.spent_nanos, 0::bigint;
        return;
      end if;
      if v_room >= p_minimum and not exists (
        select 1 from ledger_waiters w
        where (w.account_id = p_account or w.key_id = p_key) and w.expires_at > now_ms
          and (wid is null or w.id < wid)
      ) then
        v_got := least(p_wanted, v_room);
        if p_fixed is not null and (a.budget_left is not null or k.budget_left is not null or v_sleft is not null) then
          v_nanos := gateway_nanos_for(p_fixed, p_per_token, p_prompt, v_got);
          if a.budget_left is not null then v_an := v_nanos; end if;
          if k.budget_left is not null then v_kn := v_nanos; end if;
          if v_sleft is not null then v_sn := v_nanos; end if;
        end if;
        update api_keys set reserved_tokens = reserved_tokens + v_got, reserved_nanos = reserved_nanos + v_kn
          where id = p_key;
        update accounts set reserved_tokens = reserved_tokens + v_got, reserved_nanos = reserved_nanos + v_an
          where id = p_account;
        if p_session is not null then
          update session_usage set reserved_tokens = reserved_tokens + v_got, reserved_nanos = reserved_nanos + v_sn
            where key_id = p_key and session_id = p_session;
        end if;
        insert into ledger_reservations (instance_id, account_id, key_id, tokens, account_nanos, key_nanos,
                                         session_id, session_nanos, created_at)
          values (p_instance, p_account, p_key, v_got, v_an, v_kn, p_session, v_sn, now_ms) returning id into rid;
        if wid is not null then
          delete from ledger_waiters where id = wid;
          -- the next in line may fit in what is left
          perform gateway_ledger_notify(p_account, p_key);
        end if;
        return query select 'ok', v_got, v_left, v_why, rid, null::bigint, k.used_tokens, a.used_tokens,
          v_nanos, v_an, v_kn, k.spent_nanos, a.spent_nanos, v_sn;
        return;
      end if;
      if p_wait_ms <= 0 then
        if wid is not null then delete from ledger_waiters where id = wid; end if;
        return query select 'held', 0::bigint, v_left, v_why, null::bigint, null::bigint,
          k.used_tokens, a.used_tokens, null::bigint, 0::bigint, 0::bigint, k.spent_nanos, a.spent_nanos, 0::bigint;
        return;
      end if;
      if wid is null then
        insert into ledger_waiters (instance_id, account_id, key_id, expires_at)
          values (p_instance, p_account, p_key, now_ms + p_wait_ms) returning id into wid;
      else
        update ledger_waiters set expires_at = now_ms + p_wait_ms where id = wid;
      end if;
      return query select 'wait', 0::bigint, v_left, v_why, null::bigint, wid, k.used_tokens, a.used_tokens,
        null::bigint, 0::bigint, 0::bigint, k.spent_nanos, a.spent_nanos, 0::bigint;
    end $$`;

const CLOSE_SESSIONS = `
    create or replace function gateway_ledger_close(
      p_ids bigint[], p_keys text[], p_key_used bigint[], p_accounts text[], p_account_used bigint[])
    returns bigint language plpgsql as $$
    declare
      r record;
      g_keys text[];
      g_accounts text[];
      g_tokens bigint[];
      g_key_nanos bigint[];
      g_account_nanos bigint[];
      g_sessions text[];
      g_session_nanos bigint[];
    begin
      with gone as (
        delete from ledger_reservations where id = any(p_ids)
          returning key_id, account_id, tokens, key_nanos, account_nanos, session_id, session_nanos
      )
        select coalesce(array_agg(gone.key_id), '{}'), coalesce(array_agg(gone.account_id), '{}'),
               coalesce(array_agg(gone.tokens), '{}'), coalesce(array_agg(gone.key_nanos), '{}'),
               coalesce(array_agg(gone.account_nanos), '{}'), coalesce(array_agg(gone.session_id), '{}'),
               coalesce(array_agg(gone.session_nanos), '{}')
          into g_keys, g_accounts, g_tokens, g_key_nanos, g_account_nanos, g_sessions, g_session_nanos from gone;
      for r in
        select id, sum(used) as used, sum(held) as held, sum(held_nanos) as held_nanos from (
          select unnest(p_keys) as id, unnest(p_key_used) as used, 0::bigint as held, 0::bigint as held_nanos
          union all select unnest(g_keys), 0::bigint, unnest(g_tokens), unnest(g_key_nanos)
        ) x group by id order by id
      loop
        update api_keys set used_tokens = used_tokens + r.used, reserved_tokens = reserved_tokens - r.held,
            reserved_nanos = reserved_nanos - r.held_nanos
          where id = r.id;
      end loop;
      for r in
        select id, sum(used) as used, sum(held) as held, sum(held_nanos) as held_nanos from (
          select unnest(p_accounts) as id, unnest(p_account_used) as used, 0::bigint as held, 0::bigint as held_nanos
          union all select unnest(g_accounts), 0::bigint, unnest(g_tokens), unnest(g_account_nanos)
        ) x group by id order by id
      loop
        update accounts set used_tokens = used_tokens + r.used, reserved_tokens = reserved_tokens - r.held,
            reserved_nanos = reserved_nanos - r.held_nanos
          where id = r.id;
      end loop;
      -- after the keys and accounts, sessions in key and id order, as a hold locks them
      for r in
        select u.k, u.s, sum(u.t) as held, sum(u.n) as held_nanos
          from unnest(g_keys, g_sessions, g_tokens, g_session_nanos) as u(k, s, t, n)
          where u.s is not null group by u.k, u.s order by u.k, u.s
      loop
        update session_usage set reserved_tokens = reserved_tokens - r.held,
            reserved_nanos = reserved_nanos - r.held_nanos
          where key_id = r.k and session_id = r.s;
      end loop;
      for r in select distinct k, a from unnest(g_keys, g_accounts) as u(k, a) loop
        perform gateway_ledger_notify(r.a, r.k);
      end loop;
      return coalesce((select sum(t) from unnest(g_tokens) as t), 0);
    end $$`;
