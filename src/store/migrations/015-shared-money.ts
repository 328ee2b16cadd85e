import { type Kysely, PostgresAdapter, sql } from "kysely";
import { CLOSE_TOKENS, RESERVE_TOKENS } from "./010-shared-ledger.ts";

// Money in the shared ledger (issue #18): a hold on PostgreSQL also holds the most its tokens
// can cost (the caller's cost rule) against the account's and the key's budgets, read from
// their rows, atomically with the tokens under the same row locks; each hold row says how many
// nanodollars it holds against each budget (0: that budget holds none), so closing or sweeping
// it gives exactly those back, whatever the budgets became meanwhile. With Redis the same
// columns journal the money a hold holds there, for a new epoch's seed. Spending itself is
// charged by the record writer with the records (spent_nanos, month_spent_nanos), never here.
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const column of ["account_nanos", "key_nanos"])
    await db.schema
      .alterTable("ledger_reservations")
      .addColumn(column, "bigint", (c) => c.notNull().defaultTo(0))
      .execute();

  // The money helpers of src/ledger/money.ts, with the same float8 arithmetic as JavaScript's
  // numbers (and Lua's), so every ledger sizes a hold to the same token and nanodollar.
  await sql`
    create function gateway_nanos_for(p_fixed bigint, p_per_token float8, p_prompt bigint, p_tokens bigint)
    returns bigint language sql immutable as $$
      select p_fixed + ceil(greatest(0, p_tokens - p_prompt)::float8 * p_per_token)::bigint
    $$`.execute(db);
  // The most tokens p_nanos pays for; -1: not even the prompt; 2^62: any number (free output).
  await sql`
    create function gateway_tokens_for(p_fixed bigint, p_per_token float8, p_prompt bigint, p_nanos bigint)
    returns bigint language plpgsql immutable as $$
    declare
      t bigint;
    begin
      if p_nanos < p_fixed then return -1; end if;
      if p_per_token <= 0 then return 4611686018427387904; end if;
      t := p_prompt + least(floor((p_nanos - p_fixed)::float8 / p_per_token), 4611686018427387904)::bigint;
      while t > p_prompt and gateway_nanos_for(p_fixed, p_per_token, p_prompt, t) > p_nanos loop
        t := t - 1;
      end loop;
      return t;
    end $$`.execute(db);
  // What a budget leaves by consumption alone (null: no budget): for a monthly one, the
  // month's spending counts only while it is of p_month, the caller's current month.
  await sql`
    create function gateway_budget_left(
      p_budget bigint, p_period text, p_spent bigint, p_month_spent bigint, p_spent_month text, p_month text)
    returns bigint language sql immutable as $$
      select p_budget - case when p_period = 'month'
        then case when p_spent_month = p_month then p_month_spent else 0 end
        else p_spent end
    $$`.execute(db);

  // As in 010, with money: p_fixed, p_per_token and p_prompt are the call's cost rule (null:
  // the call costs nothing, budgets do not limit it), p_month the caller's "YYYY-MM" (UTC). Each
  // limit leaves some tokens: the quota and key limit by themselves, a budget what its money
  // pays for. By consumption alone the tightest names the refusal and what it leaves
  // (remaining: tokens, or nanodollars for a budget; on a tie the first of quota, key limit,
  // account budget, key budget); with the holds of calls in flight they size the hold. A hold
  // with a budget also holds its cost (nanos) against each budget there is (account_nanos,
  // key_nanos); nanos is null when no budget applies.
  await sql`drop function gateway_reserve(text, text, text, bigint, bigint, bigint, bigint, bigint)`.execute(
    db,
  );
  await sql.raw(RESERVE_MONEY).execute(db);

  // As in 010, and the money the closed holds held is no longer reserved either. The sweep
  // (gateway_ledger_sweep) closes through this function, so it releases money too.
  await sql.raw(CLOSE_MONEY).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`drop function gateway_reserve(text, text, text, bigint, bigint, bigint, bigint, bigint, bigint, float8, bigint, text)`.execute(
    db,
  );
  await sql.raw(RESERVE_TOKENS).execute(db);
  await sql.raw(CLOSE_TOKENS).execute(db);
  for (const fn of [
    "gateway_budget_left(bigint, text, bigint, bigint, text, text)",
    "gateway_tokens_for(bigint, float8, bigint, bigint)",
    "gateway_nanos_for(bigint, float8, bigint, bigint)",
  ])
    await sql.raw(`drop function ${fn}`).execute(db);
  for (const column of ["key_nanos", "account_nanos"])
    await db.schema.alterTable("ledger_reservations").dropColumn(column).execute();
}

// gateway_reserve and gateway_ledger_close as this migration made them (tokens and money),
// also for migration 023's down.
export const RESERVE_MONEY = `
    create function gateway_reserve(
      p_instance text, p_account text, p_key text, p_plan_quota bigint,
      p_wanted bigint, p_minimum bigint, p_waiter bigint, p_wait_ms bigint,
      p_fixed bigint, p_per_token float8, p_prompt bigint, p_month text)
    returns table (status text, tokens bigint, remaining bigint, reason text,
                   reservation_id bigint, waiter_id bigint, key_used bigint, account_used bigint,
                   nanos bigint, account_nanos bigint, key_nanos bigint,
                   key_spent bigint, account_spent bigint)
    language plpgsql as $$
    declare
      k record;
      a record;
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
      if v_free < p_minimum then
        if wid is not null then
          delete from ledger_waiters where id = wid;
          perform gateway_ledger_notify(p_account, p_key);
        end if;
        return query select 'refused', 0::bigint, v_left, v_why, null::bigint, null::bigint,
          k.used_tokens, a.used_tokens, null::bigint, 0::bigint, 0::bigint, k.spent_nanos, a.spent_nanos;
        return;
      end if;
      if v_room >= p_minimum and not exists (
        select 1 from ledger_waiters w
        where (w.account_id = p_account or w.key_id = p_key) and w.expires_at > now_ms
          and (wid is null or w.id < wid)
      ) then
        v_got := least(p_wanted, v_room);
        if p_fixed is not null and (a.budget_left is not null or k.budget_left is not null) then
          v_nanos := gateway_nanos_for(p_fixed, p_per_token, p_prompt, v_got);
          if a.budget_left is not null then v_an := v_nanos; end if;
          if k.budget_left is not null then v_kn := v_nanos; end if;
        end if;
        update api_keys set reserved_tokens = reserved_tokens + v_got, reserved_nanos = reserved_nanos + v_kn
          where id = p_key;
        update accounts set reserved_tokens = reserved_tokens + v_got, reserved_nanos = reserved_nanos + v_an
          where id = p_account;
        insert into ledger_reservations (instance_id, account_id, key_id, tokens, account_nanos, key_nanos, created_at)
          values (p_instance, p_account, p_key, v_got, v_an, v_kn, now_ms) returning id into rid;
        if wid is not null then
          delete from ledger_waiters where id = wid;
          -- the next in line may fit in what is left
          perform gateway_ledger_notify(p_account, p_key);
        end if;
        return query select 'ok', v_got, v_left, v_why, rid, null::bigint, k.used_tokens, a.used_tokens,
          v_nanos, v_an, v_kn, k.spent_nanos, a.spent_nanos;
        return;
      end if;
      if p_wait_ms <= 0 then
        if wid is not null then delete from ledger_waiters where id = wid; end if;
        return query select 'held', 0::bigint, v_left, v_why, null::bigint, null::bigint,
          k.used_tokens, a.used_tokens, null::bigint, 0::bigint, 0::bigint, k.spent_nanos, a.spent_nanos;
        return;
      end if;
      if wid is null then
        insert into ledger_waiters (instance_id, account_id, key_id, expires_at)
          values (p_instance, p_account, p_key, now_ms + p_wait_ms) returning id into wid;
      else
        update ledger_waiters set expires_at = now_ms + p_wait_ms where id = wid;
      end if;
      return query select 'wait', 0::bigint, v_left, v_why, null::bigint, wid, k.used_tokens, a.used_tokens,
        null::bigint, 0::bigint, 0::bigint, k.spent_nanos, a.spent_nanos;
    end $$`;

export const CLOSE_MONEY = `
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
    begin
      with gone as (
        delete from ledger_reservations where id = any(p_ids)
          returning key_id, account_id, tokens, key_nanos, account_nanos
      )
        select coalesce(array_agg(gone.key_id), '{}'), coalesce(array_agg(gone.account_id), '{}'),
               coalesce(array_agg(gone.tokens), '{}'), coalesce(array_agg(gone.key_nanos), '{}'),
               coalesce(array_agg(gone.account_nanos), '{}')
          into g_keys, g_accounts, g_tokens, g_key_nanos, g_account_nanos from gone;
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
      for r in select distinct k, a from unnest(g_keys, g_accounts) as u(k, a) loop
        perform gateway_ledger_notify(r.a, r.k);
      end loop;
      return coalesce((select sum(t) from unnest(g_tokens) as t), 0);
    end $$`;
